# frozen_string_literal: true

module Jiggler
  # Calls the error handlers (`config[:error_handlers]`, for every failure) and the death handlers
  # (`config[:death_handlers]`, for a job that reaches the dead set). A handler that raises is logged and skipped: an
  # error tracker that is down must not stop the server or keep a failure from being recorded.
  #
  #   Jiggler.configure do |config|
  #     config[:error_handlers] << ->(error, context) { Tracker.notify(error, job: context[:job]) }
  #     config[:death_handlers] << ->(job, error) { Alerts.dead(job["name"], job["jid"], error) }
  #   end
  class Handlers
    # @parameter config [Config]
    # @parameter logger [Logger]
    def initialize(config, logger)
      @config = config
      @logger = logger
    end

    # Reports a failed job to every error handler as `call(error, {job:, queue:})`.
    # @parameter error [Exception]
    # @parameter job [Hash] the payload, with the error fields already recorded.
    # @parameter queue [String]
    def failed(error, job, queue)
      each(:error_handlers) do |handler|
        handler.call(error, {job: job, queue: queue})
      end
    end

    # Reports a job that reached the dead set to every death handler as `call(job, error)`.
    def died(job, error)
      each(:death_handlers) { |handler| handler.call(job, error) }
    end

    private

    def each(key)
      @config[key].each do |handler|
        yield handler
      # a handler's fault is logged, never the server's end
      rescue Exception => problem # rubocop:disable Lint/RescueException
        @logger.error(
          "#{key} entry #{handler.inspect[0, 80]} raised " \
          "#{problem.class}: #{problem.message}"
        )
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Server
    # Tracks the failures of one background loop so that each incident is logged once, retries back off without
    # spinning, and the recovery is logged with how long the outage lasted.
    class Outage
      FIRST_DELAY = 0.05
      MAX_DELAY = 1.0

      # @parameter name [String] the loop's name, for the log.
      # @parameter logger [Logger]
      def initialize(name, logger)
        @name = name
        @logger = logger
        @since = nil
        @delay = FIRST_DELAY
      end

      # Records a failure.
      # @returns [Float] seconds to wait before trying again.
      def failed(error)
        if @since.nil?
          @since = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          @logger.error(
            "#{@name}: #{error.class}: #{error.message}; " \
            "retrying until it works"
          )
        end
        delay = @delay
        @delay = [@delay * 2, MAX_DELAY].min
        delay
      end

      # Records a success; logs the end of an outage if there was one.
      def recovered
        return unless @since
        lasted = Process.clock_gettime(Process::CLOCK_MONOTONIC) - @since
        @logger.info(format("%s: working again after %.1f s", @name, lasted))
        @since = nil
        @delay = FIRST_DELAY
      end

      # Whether the last attempt failed.
      def ongoing? = !@since.nil?
    end
  end
end

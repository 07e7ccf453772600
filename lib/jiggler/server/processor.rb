# frozen_string_literal: true

require_relative "../error"
require_relative "../payload"
require_relative "../job"
require_relative "failure"

module Jiggler
  module Server
    # Runs one fetched job: parses its payload, finds its class, checks the arguments fit `perform`, and performs it.
    # Whatever goes wrong becomes a failure record for the retry or dead set; the server itself never stops for a job.
    class Processor
      # Raised (and recorded on the job) when the payload names a class that is not a loaded Jiggler::Job.
      class UnknownJobError < Error; end

      # Raised (and recorded on the job) when the arguments do not fit `perform`.
      class ArityError < Error; end

      # @parameter logger [Logger]
      # @parameter interrupted [#call] whether the workers are being stopped, so an Async::Stop is theirs, not the job's.
      def initialize(logger:, interrupted: -> { true })
        @logger = logger
        @interrupted = interrupted
        @classes = {}
      end

      # @parameter fetched [Fetched]
      # @returns [Array | Nil] nil when the job succeeded, else its failure record for Store#fail.
      def call(fetched)
        job = Payload.load(fetched.payload)
      rescue Payload::MalformedError => error
        @logger.error { "dead: unreadable job in queue #{fetched.queue}: #{error.message}" }
        Failure.malformed(fetched, error, Time.now.to_f)
      else
        perform(fetched, job)
      end

      private

      def perform(fetched, job)
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC) if @logger.debug?
        @logger.debug { "start #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue}" }
        instance = job_class(job["name"], job["args"].size).new
        instance.jid = job["jid"]
        instance.perform(*job["args"])
        @logger.debug { "done #{job["name"]} jid=#{job["jid"]} in #{elapsed_ms(started)} ms" }
        nil
      rescue Async::Stop => error
        # A hard stop leaves the job in flight: it goes back to its queue and runs again (at-least-once). An
        # Async::Stop the job raised itself is its own failure.
        raise if @interrupted.call
        failed(fetched, job, error)
      rescue Exception => error # rubocop:disable Lint/RescueException -- any job failure, even NoMemoryError or exit, is recorded, not fatal
        failed(fetched, job, error)
      end

      def failed(fetched, job, error)
        record = Failure.record(fetched.field, job, error, Time.now.to_f)
        @logger.error do
          "#{(record[1] == "dead") ? "dead" : "retry"}: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
            "attempt=#{job["attempt"]} #{job["error_class"]}: #{job["error_message"]}"
        end
        record
      end

      def job_class(name, arg_count)
        klass, arity = @classes[name] ||= resolve(name)
        return klass if arity.cover?(arg_count)
        raise ArityError, "wrong number of arguments for #{name}#perform (given #{arg_count}, expected #{describe(arity)})"
      end

      def resolve(name)
        klass = constant(name)
        raise UnknownJobError, "#{name} is not a Jiggler::Job" unless klass.is_a?(Class) && klass.include?(Job)
        raise UnknownJobError, "#{name} has no perform method" unless klass.method_defined?(:perform)
        [klass, arity(klass.instance_method(:perform))]
      end

      def constant(name)
        Object.const_get(name)
      rescue NameError
        raise UnknownJobError, "unknown job class #{name.inspect}: is it loaded by the -r file?"
      end

      def arity(method)
        kinds = method.parameters.map(&:first)
        required = kinds.count(:req)
        required..(kinds.include?(:rest) ? Float::INFINITY : required + kinds.count(:opt))
      end

      def describe(range)
        return range.min.to_s if range.min == range.max
        range.max.infinite? ? "#{range.min}+" : "#{range.min}..#{range.max}"
      end

      def elapsed_ms(started) = ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000).round(2)
    end
  end
end

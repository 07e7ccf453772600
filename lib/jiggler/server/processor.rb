# frozen_string_literal: true

require_relative "../error"
require_relative "../payload"
require_relative "../job"
require_relative "../batch"
require_relative "../result"
require_relative "../unique_job"
require_relative "failure"

module Jiggler
  module Server
    # Runs one fetched job: parses its payload, finds its class, checks the arguments fit `perform` (or
    # `perform_batch`), performs it, and keeps its result when the class asks for it. Whatever goes wrong becomes a
    # failure record for the retry or dead set; the server itself never stops for a job.
    class Processor
      # Raised (and recorded on the job) when the payload names a class that is not a loaded Jiggler::Job.
      class UnknownJobError < Error; end

      # Raised (and recorded on the job) when the arguments do not fit `perform`.
      class ArityError < Error; end

      # @parameter logger [Logger]
      # @parameter interrupted [#call] whether the workers are being stopped, so an Async::Stop is theirs, not the job's.
      # @parameter gate [Gate | Nil] checks concurrency and rate limits; nil runs every job.
      def initialize(logger:, interrupted: -> { true }, gate: nil)
        @logger = logger
        @interrupted = interrupted
        @gate = gate
        @classes = {}
      end

      # @parameter fetched [Store::Fetched]
      # @returns [Store::Failed | Nil] nil when the job succeeded, else its failure record for Store#fail.
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
        klass, method, arity, ttl = @classes[job["name"]] ||= resolve(job["name"])
        args = arguments(job, method, arity)
        instance = klass.new
        instance.jid = job["jid"]
        return if (limits = job["limits"]) && @gate && !@gate.enter(fetched, job, limits) # waits off the queue
        release(job, :started) if job["unique"]
        value = instance.public_send(method, *args)
        keep_result(job, ttl) { Result.value(job["name"], value) } if ttl
        release(job, :finished) if job["unique"]
        leave(job, limits) if limits && @gate
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
        record = Failure.record(fetched, job, error, Time.now.to_f)
        dead = record.dead?
        @logger.error do
          "#{dead ? "dead" : "retry"}: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
            "attempt=#{job["attempt"]} #{job["error_class"]}: #{job["error_message"]}"
        end
        keep_failure(job) if dead
        release(job, :finished) if dead && job["unique"]
        leave(job, job["limits"]) if job["limits"] && @gate
        record
      end

      # Gives a limited job's slot back; if the store fails, the slot's ttl frees it.
      def leave(job, limits)
        @gate.leave(job, limits)
      rescue => error
        @logger.error("#{job["name"]} jid=#{job["jid"]}: its concurrency slot could not be freed (its ttl will): #{error.message}")
      end

      # Releases a unique job's lock (UniqueJob); if the store fails, the job goes on and the lock's ttl frees it.
      def release(job, point)
        UniqueJob.release(Jiggler.store, job, point)
      rescue => error
        @logger.error("#{job["name"]} jid=#{job["jid"]}: its unique lock could not be released (its ttl will): #{error.message}")
      end

      # Stores a dead job's error for Jiggler.result; if the store fails, the job still goes to the dead set.
      def keep_failure(job)
        ttl = @classes.dig(job["name"], 3) or return
        keep_result(job, ttl) { Result.error(job["error_class"], job["error_message"]) }
      rescue => error
        @logger.error("#{job["name"]} jid=#{job["jid"]}: its error could not be stored as its result: #{error.message}")
      end

      # The arguments to call `method` (perform, or perform_batch for a batch class) with, checked against its arity.
      # A job of a batch class that arrives on its own (enqueued before the class set batch_size) is performed as a
      # batch of one.
      def arguments(job, method, arity)
        args = job["args"]
        if method == :perform_batch
          args = [Batch.batch?(job) ? args : [args]]
        elsif Batch.batch?(job)
          raise ArityError, "#{job["name"]} got a batch of #{args.size} items but does not set batch_size " \
            "(was it removed?): give it batch_size and perform_batch(args_list) again to run the batch"
        end
        return args if arity.cover?(args.size)
        raise ArityError, "wrong number of arguments for #{job["name"]}##{method} (given #{args.size}, expected #{describe(arity)})"
      end

      # Stores a job's result (or its error) for `result_ttl` seconds, under each item's id for a batch. A return
      # value that cannot be stored is recorded as an error: the job ran, so it is not retried.
      def keep_result(job, ttl)
        json = begin
          yield
        rescue ArgumentError => error
          @logger.error("#{job["name"]} jid=#{job["jid"]}: #{error.message}; Jiggler.result raises JobFailed")
          Result.error(error.class, error.message)
        end
        jids = Batch.batch?(job) ? job["jids"] : [job["jid"]]
        Jiggler.store.save_results(jids.map { |jid| [jid, json] }, ttl)
      end

      # A job class by name, as [class, method to call, its arity, result_ttl]; cached in @classes.
      def resolve(name)
        klass = constant(name)
        raise UnknownJobError, "#{name} is not a Jiggler::Job" unless klass.is_a?(Class) && klass.include?(Job)
        method = klass.job_options[:batch_size] ? :perform_batch : :perform
        raise UnknownJobError, "#{name} has no #{method} method" unless klass.method_defined?(method)
        [klass, method, arity(klass.instance_method(method)), klass.job_options[:result_ttl]]
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

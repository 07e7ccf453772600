# frozen_string_literal: true

require_relative "../error"
require_relative "../payload"
require_relative "../job"
require_relative "../job_timeout"
require_relative "../batch"
require_relative "../result"
require_relative "../handlers"
require_relative "../job_rules"
require_relative "../job_payload"
require_relative "../unique_job"
require_relative "../iteration"
require_relative "../store/connection_error"
require_relative "failure"

module Jiggler
  module Server
    # Runs one fetched job: parses its payload, finds its class, checks the arguments fit `perform` (or
    # `perform_batch`), performs it, and keeps its result when the class asks for it. Whatever goes wrong becomes a
    # failure record for the retry or dead set; the server itself never stops for a job.
    class Processor
      # Raised (and recorded on the job) when the arguments do not fit `perform`.
      class ArityError < Error; end

      # What `measured` returns for a job the shutdown stopped.
      Interrupted = Struct.new(:stop)
      private_constant :Interrupted

      # The outcome of a run, which `call` returns and which tells the fetcher what to do with the delivery (Workers):
      # DONE, or the failure record (a Store::Failed: failed, snoozed or cancelled) to write; both are acknowledged with
      # the next round trip. SUSPECT, WAITING and COMPLETED are not acknowledged.

      # What `call` returns for a job that ran to its end: acknowledged with the next round trip.
      DONE = :done

      # What `call` returns for a suspect (JobRules.suspect?) it did not run, since it may not run beside other jobs.
      SUSPECT = :suspect

      # What `call` returns for a job the Gate moved off flight to wait for its slot or its rate's budget: it did not
      # run, and it is no longer this delivery's to acknowledge (it may even be fetched again before the next ack).
      WAITING = :waiting

      # What `call` returns for a workflow step that succeeded: it was acknowledged with its completion (Steps), so,
      # as for WAITING, the caller must not acknowledge it again.
      COMPLETED = :completed

      # @parameter logger [Logger]
      # @parameter results [Store::Redis | Store::SQLite] where the results of classes with `result_ttl` are saved.
      # @parameter interrupted [#call] whether the workers are being stopped, so an Async::Stop is theirs, not the
      #   job's.
      # @parameter alone [#call] whether a fetched job runs alone in this process, so a suspect may run.
      # @parameter config [Config] its job wrapper, server middleware and error and death handlers.
      # @parameter metrics [Metrics::Recorder | Nil] counts each run by class, with its duration.
      # @parameter gate [Gate | Nil] checks concurrency and rate limits; nil runs every job.
      # @parameter executions [Executions | Nil] the running jobs, for cancel, timeout and progress; nil: none of them.
      # @parameter iterations [Iterations | Nil] checkpoints and stops iterable jobs; nil: they run to their end.
      # @parameter steps [Steps | Nil] completes workflow steps; nil: a step is acknowledged as any job, and its
      #   dependants never run (a server always gives one).
      def initialize(
        logger:,
        results:,
        config:,
        interrupted: -> { true },
        alone: ->(_fetched) { true },
        metrics: nil,
        gate: nil,
        executions: nil,
        iterations: nil,
        steps: nil
      )
        @logger = logger
        @steps = steps
        @iterations = iterations
        @executions = executions
        @results = results
        @alone = alone
        @interrupted = interrupted
        @metrics = metrics
        @gate = gate
        @classes = {}
        @reloads = Job.reloads
        @wrapper = config.job_wrapper
        unless config.server_middleware.empty?
          @middleware = config.server_middleware
        end
        @handlers = Handlers.new(config, logger)
      end

      # @parameter fetched [Store::Fetched]
      # @returns [DONE | Store::Failed | SUSPECT | WAITING | COMPLETED] the outcome of the run (see DONE).
      # @raises [Async::Stop] when the shutdown stopped the job: it stays in flight, to go back to its queue.
      def call(fetched)
        job = Payload.load(fetched.payload)
      rescue Payload::MalformedError => error
        @logger.error do
          "dead: unreadable job in queue #{fetched.queue}: #{error.message}"
        end
        Failure.malformed(fetched, error, Time.now.to_f).tap do |record|
          @handlers.died(Payload.parse(record.payload), error)
        end
      else
        return SUSPECT if JobRules.suspect?(job) && !@alone.call(fetched)
        outcome = @wrapper ?
          @wrapper.call { measured(fetched, job) } :
          measured(fetched, job)
        outcome.is_a?(Interrupted) ?
          requeued(fetched, job, outcome.stop) :
          outcome
      end

      private

      # Performs a job, counting its run, with its duration, when per-class metrics are on; a job that waits for its
      # limit did not run, so it is not counted.
      def measured(fetched, job)
        return perform(fetched, job) unless @metrics
        started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        outcome = perform(fetched, job)
        if outcome.equal?(DONE) # nearly every run: one comparison
          @metrics.record(
            job["name"],
            Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
            false
          )
        elsif !outcome.equal?(WAITING) && !outcome.is_a?(Interrupted)
          # a snooze or a cancel is not a failure
          failed = outcome.is_a?(Store::Failed) && outcome.failure?
          @metrics.record(
            job["name"],
            Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
            failed
          )
        end
        outcome
      end

      def perform(fetched, job)
        # The level is read once per job: each read costs a Logger lookup of its level override (logger >= 1.6).
        if (debug = @logger.debug?)
          started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          @logger.debug(
            "start #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
            "attempt=#{attempt(job)}"
          )
        end
        forget_classes if Job.reloads != @reloads
        name = job["wrapper"] || job["name"]
        klass, method, arity, ttl, iterable = @classes[name] ||= resolve(name)
        wrapper!(klass) if job["wrapper"]
        args = arguments(job, method, arity)
        instance = klass.new
        instance.jid = job["jid"]
        if iterable && @iterations
          instance.iteration = @iterations.delivery(fetched, job)
        end
        # A job outside a workflow pays this one lookup: its completion below reuses it.
        workflow = @steps && job["workflow"]
        if workflow && job["after"]
          instance.workflow_step = -> { @steps.results(job) }
        end
        if workflow && job["on_complete"]
          instance.workflow_members = -> { @steps.outcome(job) }
        end
        if (limits = job["limits"]) && @gate
          # A job cancelled before it reaches its limit ends here: waiting for a slot, it could outlast the request.
          by = @executions&.requested_by(job["jid"])
          return cancelled(fetched, job, by) if by
          return WAITING unless @gate.enter(fetched, job, limits)
        end
        release(job, :started) if job["unique"]
        execution = track(instance, job)
        # cancelled before it started
        return ended(fetched, job, execution) if execution&.cancelled_by
        value = catch(Job::SNOOZE) do
          invoke(instance, method, args, job, fetched.queue)
        end
        # it returned once it saw `cancelled?`
        return ended(fetched, job, execution) if execution&.seen?
        # a cancel that comes now is too late: the job ran to its end
        execution&.finished!
        return snoozed(fetched, job, value) if value.is_a?(Job::Snooze)
        keep_result(job, ttl) { Result.value(job["name"], value) } if ttl
        release(job, :finished) if job["unique"]
        leave(job) if limits && @gate
        if debug
          @logger.debug(
            "done #{job["name"]} jid=#{job["jid"]} " \
            "in #{elapsed_ms(started)} ms queue=#{fetched.queue} " \
            "attempt=#{attempt(job)}"
          )
        end
        return completed(fetched, job, value) if workflow
        DONE
      rescue Async::Stop => error
        # Cancel, timeout and shutdown stop a job the same way; what ended it decides where it goes. A cancel or a
        # timeout is the job's own end (cancelled; failed with JobTimeout), even during a shutdown. A hard stop leaves
        # the job in flight: it goes back to its queue and runs again (at-least-once). It leaves the job wrapper as a
        # value, not an error, for a wrapper reports what escapes it (a Rails executor does, to Rails.error). An
        # Async::Stop the job raised itself is its own failure.
        return ended(fetched, job, execution) if execution&.ended_by
        return Interrupted.new(error) if @interrupted.call
        failed(fetched, job, error)
      # any job failure, even NoMemoryError or exit, is recorded, not fatal
      rescue Exception => error # rubocop:disable Lint/RescueException
        failed(fetched, job, error)
      ensure
        @executions.finish(execution) if execution
      end

      def invoke(instance, method, args, job, queue)
        return instance.public_send(method, *args) unless @middleware
        @middleware.invoke(instance, job, queue) do
          instance.public_send(method, *args)
        end
      end

      # Registers the job's run with Executions, so it can be cancelled, timed out and report progress.
      def track(instance, job)
        return unless @executions
        timeout = job["timeout"]
        instance.execution = @executions.begin(
          job["jid"],
          (timeout if timeout.is_a?(Numeric) && timeout.positive?)
        )
      end

      # A job ended by a cancel (to the dead set, marked, not a failure) or by its timeout (a JobTimeout failure).
      def ended(fetched, job, execution)
        if execution.ended_by == :timeout
          return failed(fetched, job, JobTimeout.new(execution.timeout))
        end
        cancelled(fetched, job, execution.cancelled_by)
      end

      # A cancelled job: to the dead set, marked, not a failure; its lock and slot are given back.
      def cancelled(fetched, job, by)
        @logger.warn(
          "cancelled: #{job["name"]} jid=#{job["jid"]} " \
          "queue=#{fetched.queue} by #{by}"
        )
        release(job, :finished) if job["unique"]
        leave(job) if job["limits"] && @gate
        Failure.cancel(fetched, job, by, Time.now.to_f)
      end

      # A job that asked to run again later (Job#snooze): to the scheduled set, its attempts unchanged. An iterable job
      # that stopped for the shutdown (Iteration::Interruption) goes back to its queue instead.
      def snoozed(fetched, job, snooze)
        leave(job) if job["limits"] && @gate
        if snooze.is_a?(Iteration::Interruption)
          return iteration_requeued(fetched, job)
        end
        @logger.info do
          "snoozed: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
          "for #{snooze.seconds} s"
        end
        Failure.snooze(fetched, job, snooze.seconds, Time.now.to_f)
      end

      # An iterable job that stopped between two items for the shutdown: back at the head of its queue at once, with
      # its cursor, its attempts unchanged. It left flight, so it is not acknowledged (WAITING); if the store cannot
      # be reached it stays in flight as checkpointed, for the shutdown's requeue or a reaper.
      def iteration_requeued(fetched, job)
        moved = @iterations.requeue(fetched, job)
        @logger.warn do
          "requeued: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
            "at cursor #{Payload.preview(job["cursor"])} " \
            "(an iterable job stopped for the shutdown" \
            "#{", but it was no longer in flight here" if moved.zero?})"
        end
        WAITING
      rescue Store::ConnectionError => error
        @logger.error(
          "#{job["name"]} jid=#{job["jid"]}: " \
          "not requeued (#{error.message}); " \
          "it stays in flight at its last checkpoint"
        )
        WAITING
      end

      # A job the shutdown stopped: not a failure. One line says so, then the stop goes on, leaving the job in flight.
      def requeued(fetched, job, stop)
        @logger.warn(
          "requeued: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue} " \
          "(stopped by the shutdown: it goes back to its queue and runs again)"
        )
        raise stop
      end

      def failed(fetched, job, error)
        record = Failure.record(fetched, job, error, Time.now.to_f)
        dead = record.dead?
        @logger.error do
          "#{dead ? "dead" : "retry"}: #{job["name"]} jid=#{job["jid"]} " \
            "queue=#{fetched.queue} attempt=#{job["attempt"]} " \
            "#{job["error_class"]}: #{job["error_message"]}"
        end
        keep_failure(job) if dead
        @handlers.failed(error, job, fetched.queue)
        @handlers.died(job, error) if dead
        release(job, :finished) if dead && job["unique"]
        leave(job) if job["limits"] && @gate
        # Before the move to the dead set: killed in between, the step runs again, and its death is recorded once.
        @steps.died(job) if dead && @steps && job["workflow"]
        record
      rescue JSON::GeneratorError => problem
        unwritable(fetched, job, error, problem)
      end

      # A job that was read but cannot be written back (a number like 1e400 reads as Infinity, which JSON cannot
      # write) goes to the dead set as it was stored; the log says why.
      def unwritable(fetched, job, error, problem)
        @logger.error do
          "dead: #{job["name"]} jid=#{job["jid"]} queue=#{fetched.queue}: " \
            "#{error.class}: #{error.message}; its failure cannot be written " \
            "on the job (#{problem.message}: a number beyond Float's range, " \
            "like 1e400, reads as Infinity), so it goes to the dead set as " \
            "it was stored"
        end
        @handlers.died(job, error)
        Failure.malformed(fetched, problem, Time.now.to_f)
      end

      # A workflow step that succeeded: done, acknowledged and its dependants released in one store step (Steps).
      def completed(fetched, job, value)
        @steps.complete(fetched, job, value)
        COMPLETED
      end

      # Gives a limited job's slot back; if the store fails, the slot's ttl frees it.
      def leave(job)
        @gate.leave(job)
      rescue => error
        @logger.error(
          "#{job["name"]} jid=#{job["jid"]}: its concurrency slot could not " \
          "be freed (its ttl will): #{error.message}"
        )
      end

      # Releases a unique job's lock (UniqueJob); if the store fails, the job goes on and the lock's ttl frees it.
      def release(job, point)
        UniqueJob.release(@results, job, point)
      rescue => error
        @logger.error(
          "#{job["name"]} jid=#{job["jid"]}: its unique lock could not be " \
          "released (its ttl will): #{error.message}"
        )
      end

      # Stores a dead job's error for Jiggler.result; if the store fails, the job still goes to the dead set.
      def keep_failure(job)
        ttl = @classes.dig(job["wrapper"] || job["name"], 3) or return
        keep_result(job, ttl) do
          Result.error(job["error_class"], job["error_message"])
        end
      rescue => error
        @logger.error(
          "#{job["name"]} jid=#{job["jid"]}: its error could not be stored " \
          "as its result: #{error.message}"
        )
      end

      # The arguments to call `method` (perform, or perform_batch for a batch class) with, checked against its arity.
      # A job of a batch class that arrives on its own (enqueued before the class set batch_size) is performed as a
      # batch of one. A wrapper class (named by the payload's "wrapper", as Active Job's is) gets the whole payload.
      def arguments(job, method, arity)
        return [job] if job["wrapper"]
        args = job["args"]
        if method == :perform_batch
          args = [Batch.batch?(job) ? args : [args]]
        elsif Batch.batch?(job)
          raise ArityError,
            "#{job["name"]} got a batch of #{args.size} items but does not " \
            "set batch_size (was it removed?): give it batch_size and " \
            "perform_batch(args_list) again to run the batch"
        end
        return args if arity.cover?(args.size)
        raise ArityError,
          "wrong number of arguments for #{job["name"]}##{method} " \
          "(given #{args.size}, expected #{describe(arity)})"
      end

      # Stores a job's result (or its error) for `result_ttl` seconds, under each item's id for a batch. A return
      # value that cannot be stored is recorded as an error: the job ran, so it is not retried.
      def keep_result(job, ttl)
        json = begin
          yield
        rescue ArgumentError => error
          @logger.error(
            "#{job["name"]} jid=#{job["jid"]}: #{error.message}; " \
            "Jiggler.result raises JobFailed"
          )
          Result.error(error.class, error.message)
        end
        jids = Batch.batch?(job) ? job["jids"] : [job["jid"]]
        @results.save_results(jids.map { |jid| [jid, json] }, ttl)
      end

      # Empties the cache of job classes once the app's code was reloaded, so new jobs run the new code.
      def forget_classes
        @classes.clear
        @reloads = Job.reloads
      end

      # A job class by name, as [class, method to call, its arity, result_ttl, whether it is iterable]; cached in
      # @classes.
      def resolve(name)
        klass = constant(name)
        unless klass.is_a?(Class) && klass.include?(Job)
          raise UnknownJobError, "#{name} is not a Jiggler::Job"
        end
        method = klass.job_options[:batch_size] ? :perform_batch : :perform
        unless klass.method_defined?(method)
          raise UnknownJobError, "#{name} has no #{method} method"
        end
        iterable = klass.respond_to?(:jiggler_iterable?)
        # An iterable job's arguments are those of its build_enumerator (Iteration#perform takes any).
        signature = klass.instance_method(iterable ? :build_enumerator : method)
        [
          klass,
          method,
          arity(signature),
          klass.job_options[:result_ttl],
          iterable
        ]
      end

      # A payload's "wrapper" runs the job in its class's place (Active Job's does): only a class that says it is one
      # may, or a payload could run another job than the one it shows.
      def wrapper!(klass)
        unless klass.respond_to?(:jiggler_wrapper?)
          raise UnknownJobError, "#{klass} is not a job wrapper"
        end
      end

      def constant(name)
        Object.const_get(name)
      rescue NameError
        error = UnknownJobError.new(
          "unknown job class #{name.inspect}: is it loaded by the -r file?"
        )
        # retried whatever its retries
        raise error.extend(UnknownJobError::NotLoaded)
      end

      def arity(method)
        kinds = method.parameters.map(&:first)
        required = kinds.count(:req)
        required..(
          kinds.include?(:rest) ? Float::INFINITY : required + kinds.count(:opt)
        )
      end

      def describe(range)
        return range.min.to_s if range.min == range.max
        range.max.infinite? ? "#{range.min}+" : "#{range.min}..#{range.max}"
      end

      # How many times the job failed before this run.
      def attempt(job) = JobPayload.count(job["attempt"])

      def elapsed_ms(started)
        ((Process.clock_gettime(Process::CLOCK_MONOTONIC) - started) * 1000)
          .round(2)
      end
    end
  end
end

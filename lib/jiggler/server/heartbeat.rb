# frozen_string_literal: true

require_relative "outage"
require_relative "../payload"

module Jiggler
  module Server
    # Registers the process and refreshes its registration every `interval` seconds, on a thread of its own: a job
    # that holds the reactor with CPU work does not stop the heartbeat, so a busy process never looks dead.
    class Heartbeat
      # How much of a running job's arguments a heartbeat carries, as JSON text.
      ARGS_LIMIT = 2_048

      # @parameter store [Store::Redis | Store::SQLite] a store on a connection of its own (used from this thread only).
      # @parameter identity [Identity]
      # @parameter workers [Workers] asked for the jobs running now.
      # @parameter interval [Numeric] seconds between beats.
      # @parameter ttl [Numeric] seconds the registration lives without a beat; then the process counts as dead.
      def initialize(store:, identity:, workers:, interval:, ttl:, logger:)
        @store = store
        @identity = identity
        @workers = workers
        @interval = interval
        @ttl = ttl
        @logger = logger
        @outage = Outage.new("heartbeat", logger)
        @mutex = Thread::Mutex.new
        @wakeup = Thread::ConditionVariable.new
        @stopping = false
        @summaries = {}
      end

      # Beats once now, then every interval on a background thread.
      # @raises [Store::ConnectionError] when the first beat fails.
      def start
        beat
        @thread = Thread.new { run }
        @thread.name = "jiggler.heartbeat"
      end

      # Stops the thread and removes the registration.
      # @parameter unregister [Boolean] false keeps the registration to expire, so the jobs left in flight are found.
      def stop(unregister: true)
        @mutex.synchronize do
          @stopping = true
          @wakeup.signal
        end
        @thread&.join(1) # a beat stuck on an unreachable store is abandoned: the process is exiting
        unregister_now if unregister
      ensure
        @store.close
      end

      private

      # Tries twice, since the first use of a connection the store dropped fails; without it, the registration expires
      # within the TTL anyway, so a failure is only logged.
      def unregister_now
        attempts = 0
        begin
          @store.unregister(@identity.id)
        rescue Store::ConnectionError => error
          retry if (attempts += 1) < 2
          @logger.warn("heartbeat: could not unregister (#{error.message}); the registration expires within #{@ttl} s")
        end
      end

      # After a failed beat the next try comes after the back-off, not a whole interval: a registration must not
      # expire because of one dropped connection.
      def run
        delay = @interval
        until stopped_after?(delay)
          begin
            beat
            @outage.recovered
            delay = @interval
          rescue => error
            delay = @outage.failed(error)
          end
        end
      end

      # Waits `seconds`, or less when `stop` is called; returns whether it was.
      def stopped_after?(seconds)
        @mutex.synchronize do
          @wakeup.wait(@mutex, seconds) unless @stopping
          @stopping
        end
      end

      def beat
        info = Payload.dump(@identity.info(running))
        @store.beat(@identity.id, info, @ttl)
      end

      # The running jobs by in-flight field, each as a summary of a bounded size made once per job: a heartbeat must
      # not grow with the jobs' payloads (ten jobs of 10 MB would make every beat and every dashboard read 100 MB).
      def running
        @summaries = @workers.current_jobs.to_h { |field, work| [field, @summaries[field] || summarize(work)] }
      end

      # @returns [Hash] queue, class, jid, args (JSON text cut to ARGS_LIMIT) and run_at (epoch seconds).
      def summarize(work)
        job = Payload.load(work["payload"])
        args = Payload.dump(job["args"])
        args = "#{args[0, ARGS_LIMIT]}…" if args.length > ARGS_LIMIT
        {"queue" => work["queue"], "class" => job["name"], "jid" => job["jid"], "args" => args, "run_at" => work["run_at"]}
      rescue Payload::MalformedError, JSON::GeneratorError # sent to the dead set by its worker
        {"queue" => work["queue"], "class" => "(unreadable)", "jid" => nil, "args" => "", "run_at" => work["run_at"]}
      end
    end
  end
end

# frozen_string_literal: true

require_relative "outage"
require_relative "../payload"

module Jiggler
  module Server
    # Registers the process and refreshes its registration every `interval` seconds, on a thread of its own: a job
    # that holds the reactor with CPU work does not stop the heartbeat, so a busy process never looks dead.
    #
    # Between beats it looks once a second at the jobs running and reports them again when they changed, so the Busy
    # page shows a job within about a second of its start, and its progress within about a second of its report (one
    # write a second at most, never one per job). Each beat also takes the quiet and stop requests sent to the
    # process through the store, and acts on them as on the signals TSTP and TERM.
    class Heartbeat
      # Seconds between looks at the running jobs.
      REPORT_INTERVAL = 1.0
      # The signal each request taken from the store becomes.
      SIGNALS = {"quiet" => "TSTP", "stop" => "TERM"}.freeze
      # How much of a running job's arguments a heartbeat carries, as JSON text.
      ARGS_LIMIT = 2_048

      # @parameter store [Store::Redis | Store::SQLite] a store on a connection of its own (used from this thread only).
      # @parameter identity [Identity]
      # @parameter workers [Workers] asked for the jobs running now.
      # @parameter interval [Numeric] seconds between beats.
      # @parameter ttl [Numeric] seconds the registration lives without a beat; then the process counts as dead.
      # @parameter metrics [Metrics::Recorder | Nil] whose counts each beat writes.
      # @parameter metrics_retention [Numeric] seconds the store keeps each minute's counts.
      # @parameter executions [Executions | Nil] the progress the running jobs report.
      def initialize(
        store:,
        identity:,
        workers:,
        interval:,
        ttl:,
        logger:,
        metrics: nil,
        metrics_retention: 8 * 3600,
        executions: nil
      )
        @executions = executions
        @store = store
        @identity = identity
        @workers = workers
        @interval = interval
        @ttl = ttl
        @logger = logger
        @metrics = metrics
        @metrics_retention = metrics_retention
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

      # Whether a stop request came through the store (`jiggler stop`, the dashboard's Stop), not a
      # signal: a supervisor does not replace a server process stopped so.
      def stop_requested? = @stop_requested == true

      # Stops the thread and removes the registration.
      # @parameter unregister [Boolean] false keeps the registration to expire, so the jobs left in flight are found.
      def stop(unregister: true)
        @mutex.synchronize do
          @stopping = true
          @wakeup.signal
        end
        # a beat stuck on an unreachable store is abandoned: the process is exiting
        @thread&.join(1)
        write_metrics_now
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
          @logger.warn(
            "heartbeat: could not unregister (#{error.message}); " \
            "the registration expires within #{@ttl} s"
          )
        end
      end

      # After a failed beat the next try comes after the back-off, not a whole interval: a registration must not
      # expire because of one dropped connection.
      def run
        delay = tick
        until stopped_after?(delay)
          begin
            # after a failure, only a beat tells it works
            (beat_due? || @outage.ongoing?) ? beat : report_changes
            @outage.recovered
            delay = tick
          rescue => error
            delay = @outage.failed(error)
          end
        end
      end

      # Waits `seconds`, or less when `stop` is called; returns whether it was.
      # A wait may end early (a spurious wakeup): it goes on until the time has passed, so a beat never comes early.
      def stopped_after?(seconds)
        deadline = monotonic + seconds
        @mutex.synchronize do
          until @stopping || (left = deadline - monotonic) <= 0
            @wakeup.wait(@mutex, left)
          end
          @stopping
        end
      end

      def tick = [REPORT_INTERVAL, @interval].min

      def beat_due? = monotonic >= @next_beat

      def beat
        @next_beat = monotonic + @interval
        report(running)
        @store.take_signals(@identity.id).each { |request| obey(request) }
        write_metrics
      end

      # Writes the runs counted since the last beat, under the current minute; counts that cannot be written are kept
      # for the next beat.
      def write_metrics
        return unless @metrics
        taken = @metrics.take
        unless taken.empty?
          @store.add_metrics(
            Time.now.to_i / 60, taken, retention: @metrics_retention
          )
        end
      rescue
        @metrics.restore(taken) if taken
        raise
      end

      # The last counts, at stop; lost (and logged) when the store cannot be reached.
      def write_metrics_now
        write_metrics
      rescue => error
        @logger.warn(
          "heartbeat: the last job metrics could not be written " \
          "(#{error.message})"
        )
      end

      # Reports the running jobs again when they, or their progress, are not what was reported last.
      def report_changes
        jobs = running
        report(jobs) unless jobs == @reported
      end

      def report(jobs)
        @store.beat(@identity.id, Payload.dump(@identity.info(jobs)), @ttl)
        @reported = jobs
      end

      # Sends this process the signal a request stands for: the CLI's handlers quiet or stop it as they would for
      # `kill -TSTP` or `kill -TERM`.
      def obey(request)
        signal = SIGNALS[request] or return @logger.warn(
          "heartbeat: ignored an unknown request #{request.inspect}"
        )
        @logger.info("heartbeat: #{request} requested through the store")
        @stop_requested = true if request == "stop"
        Process.kill(signal, Process.pid)
      end

      def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

      # The running jobs by in-flight field, each as a summary of a bounded size made once per job: a heartbeat must
      # not grow with the jobs' payloads (ten jobs of 10 MB would make every beat and every dashboard read 100 MB).
      def running
        @summaries = @workers.current_jobs.to_h do |field, work|
          [field, @summaries[field] || summarize(work)]
        end
        @executions ? with_progress(@summaries) : @summaries
      end

      # The summaries, each with the progress its job reported (Job#progress) when it did.
      def with_progress(summaries)
        summaries.transform_values do |summary|
          progress = summary["jid"] && @executions.progress(summary["jid"])
          progress ? summary.merge("progress" => progress) : summary
        end
      end

      # @returns [Hash] queue, class, jid, args (JSON text cut to ARGS_LIMIT) and run_at (epoch seconds).
      def summarize(work)
        job = Payload.load(work["payload"])
        args = Payload.dump(job["args"])
        args = "#{args[0, ARGS_LIMIT]}…" if args.length > ARGS_LIMIT
        {
          "queue" => work["queue"],
          "class" => job["name"],
          "jid" => job["jid"],
          "args" => args,
          "run_at" => work["run_at"]
        }
      # sent to the dead set by its worker
      rescue Payload::MalformedError, JSON::GeneratorError
        {
          "queue" => work["queue"],
          "class" => "(unreadable)",
          "jid" => nil,
          "args" => "",
          "run_at" => work["run_at"]
        }
      end
    end
  end
end

# frozen_string_literal: true

require "set"
require "async/notification"
require "async/task"
require_relative "../store/contract"
require_relative "outage"
require_relative "push_wait"
require_relative "queue_order"
require_relative "suspects"

module Jiggler
  module Server
    # Keeps the workers fed: each round trip acknowledges the jobs that finished since the last one and takes as many
    # new jobs as there are free workers (and some ahead, see `ahead`), from the queues in the order QueueOrder gives
    # (strict priority, or by weight). When the queues are empty it waits for the Listener to hear of a push (and polls
    # every IDLE_POLL seconds, in case an announcement was missed), so an idle server costs almost nothing. A wholly
    # idle at-least-once server of one queue waits in the store instead when the store can (PushWait).
    #
    # A suspect (JobRules.death) runs only alone: when a worker hands one back, the fetcher stops taking jobs, lets
    # the others finish and acknowledges them, and Suspects runs it alone.
    class Fetcher
      IDLE_POLL = 5.0
      MAX_ACKS = 1000
      # At most this many jobs taken ahead of the free workers (see `ahead`). Noop jobs on Redis at -c 10 and -c 100:
      # 1,000 ran no faster than 400 and cost 14-16 major GCs per 100,000 jobs (twice the GC time) where 400 cost 8.
      MAX_AHEAD = 400

      # @parameter store [Store::Redis | Store::SQLite] a store for this fetcher alone.
      # @parameter process [String] this process's id.
      # @parameter config [Config]
      # @parameter workers [Workers]
      # @parameter suspects [Suspects] the suspects of this process, held to run alone.
      def initialize(store:, process:, config:, workers:, suspects:, logger:)
        @store = store
        @process = process
        @queues = QueueOrder.new(config)
        @reliable = config.at_least_once?
        @dead_timeout = config[:dead_timeout]
        @dead_max = config[:dead_max_jobs]
        @workers = workers
        @logger = logger
        @outage = Outage.new("fetcher", logger)
        @changed = Async::Notification.new
        @acks = []
        @failures = []
        @suspects = suspects
        @state = :running
        @pushed = true
        # Waiting in the store (see `wait_for_push`) needs at-least-once (an interrupted wait's jobs go back), one
        # queue and a store that can.
        if @reliable &&
            @queues.names.size == 1 &&
            Store::Contract.supports?(store, :fetch_when_pushed)
          @push_wait = PushWait.new(
            store: store,
            process: process,
            queue: @queues.names.first,
            workers: workers,
            timeout: IDLE_POLL
          )
        end
      end

      # @parameter parent [Async::Task]
      def start(parent:)
        @task = parent.async(annotation: "jiggler.fetcher") { run }
      end

      # Looks at the queues again: a job was pushed to one that was empty.
      def pushed
        @pushed = true
        @changed.signal
      end

      # Records a finished job, to be acknowledged (or moved to retry or dead) with the next round trip.
      # @parameter fetched [Store::Fetched]
      # @parameter failure [Store::Failed | Nil] the failure record, when the job failed.
      def done(fetched, failure)
        failure ? @failures << failure : @acks << fetched.handle
        @suspects.left(fetched)
        @changed.signal
      end

      # Forgets a job the gate moved off flight to wait for its limit: it is not acknowledged, since its handle may
      # name a new delivery by then (an SQLite row fetched again once its slot freed).
      # @parameter fetched [Store::Fetched]
      def moved(fetched)
        @suspects.left(fetched)
        @changed.signal
      end

      # Holds a suspect the workers would not run beside other jobs, to run it alone.
      # @parameter fetched [Store::Fetched]
      def isolate(fetched)
        @suspects.hold(fetched)
        @changed.signal
      end

      # Stops taking new jobs; finished ones are still acknowledged.
      def quiet
        @state = :quiet if @state == :running
        @push_wait&.cut
        @changed.signal
      end

      # Stops the loops and acknowledges what is left, trying for at most `timeout` seconds.
      # @asynchronous
      def stop(timeout)
        @state = :stopped
        @push_wait&.cut
        @changed.signal
        @task&.wait
        flush(timeout)
      end

      # Acknowledgements and failures not yet written.
      def pending = @acks.size + @failures.size

      private

      def run
        loop do
          break if @state == :stopped
          # A wait in the store has just fetched: the workers go first.
          @fetched_in_wait ? @fetched_in_wait = false : cycle
          reconcile if @outage.ongoing?
          @outage.recovered
          next if more_to_do?
          wait_in_store? ? @fetched_in_wait = wait_for_push : wait(IDLE_POLL)
        rescue => error
          pause(@outage.failed(error))
        end
      end

      def cycle
        write_failures unless @failures.empty?
        @suspects.run_alone(@workers) if @suspects.waiting? && settled?
        # Free workers can be fewer than none while jobs taken ahead wait; a negative limit would hand tokens back.
        limit = fetching? ? [@workers.free + ahead, 0].max : 0
        return if limit <= 0 && @acks.empty?
        @pushed = false
        jobs = fetch(limit)
        @workers.assign(jobs) unless jobs.empty?
        @drained = jobs.size < limit
      end

      # Jobs to take beyond the free workers, while jobs are short (Workers#short_jobs?), so that workers find the next
      # one waiting instead of waiting for a round trip: as many as finished since the last round trip. When that is a
      # job per worker or more, the workers may have run out during the round trip (a slow store, a busy host): twice as
      # many, so that what is taken ahead doubles each round trip until it lasts one, up to MAX_AHEAD. What it settles
      # at is what the workers really run in a round trip: no more jobs than that wait in memory (jobs that wait long
      # are promoted to the old generation, and each major GC walks them). Long jobs are never taken ahead: they would
      # wait a whole run that another process could start. Weighted queues take at most `concurrency` ahead: the order
      # is drawn once per round trip, so a few large batches would give each queue a lumpy share.
      def ahead
        return 0 unless @workers.short_jobs?
        concurrency = @workers.concurrency
        finished = @acks.size
        return finished if finished < concurrency
        return concurrency if @queues.weighted?
        (finished * 2).clamp(concurrency, MAX_AHEAD)
      end

      # Takes new jobs unless a suspect waits to run alone, or runs alone.
      def fetching? = @state == :running && !@suspects.blocking?

      # Running, and nothing runs, waits for a worker or is left to acknowledge: this process holds only its suspects.
      def settled?
        @state == :running &&
          !@suspects.running? &&
          @workers.idle? &&
          @acks.empty? &&
          @failures.empty?
      end

      def fetch(limit)
        acks = @acks.shift(MAX_ACKS)
        @store.fetch(
          @process, @queues.next, limit: limit, acks: acks, reliable: @reliable
        )
      rescue
        @acks.unshift(*acks)
        raise
      end

      # Whether to wait in the store (see `wait_for_push`): it can, the process is settled with no suspect held, and the
      # last such wait was not woken in vain (a paused queue holding jobs, or another process took the job first), which
      # would wake it again at once.
      def wait_in_store?
        !@push_wait.nil? && !@in_vain && !@suspects.waiting? && settled?
      end

      # Waits in the store for a push (PushWait), whose jobs the workers have at once. A wait cut short by quiet or stop
      # may have taken jobs that never arrived, which `reconcile` puts back.
      # @returns [Boolean] whether the wait ended by itself (woken or timed out), not cut short.
      def wait_for_push
        limit = @workers.free
        jobs = @push_wait.call(limit)
        if jobs.equal?(PushWait::CUT)
          reconcile
          return false
        end
        # The push that woke the wait was announced too; a later one finds the next wait returning at once.
        @pushed = false
        @in_vain = jobs&.empty?
        @drained = (jobs&.size || 0) < limit
        true
      end

      # A round trip that failed may still have run in the store: jobs recorded in flight for this process that it never
      # received would stay there for good. Put those back in their queues.
      def reconcile
        return unless @reliable
        known = (
          @workers.assigned_handles +
          @acks +
          @failures.map { |failed| failed.fetched.handle } +
          @suspects.handles
        ).to_set
        stray = @store.in_flight(@process)
          .reject { |job| known.include?(job.handle) }
        return if stray.empty?
        @store.requeue(@process, stray)
        @logger.warn(
          "fetcher: #{stray.size} jobs taken during the outage never " \
          "arrived; they are back in their queues"
        )
      end

      def write_failures
        failures = @failures.dup
        @store.fail(
          @process,
          failures,
          reliable: @reliable,
          dead_cutoff: Time.now.to_f - @dead_timeout,
          dead_max: @dead_max
        )
        @failures.shift(failures.size)
      end

      def more_to_do?
        return false if @state == :stopped
        if @acks.any? || @failures.any? || (@suspects.waiting? && settled?)
          return true
        end
        fetching? && @workers.free.positive? && (@pushed || !@drained)
      end

      def flush(timeout)
        deadline = now + timeout
        loop do
          break if pending.zero? || now > deadline
          cycle
        rescue => error
          @logger.error(
            "fetcher: could not acknowledge #{pending} jobs at shutdown " \
            "(#{error.message}); retrying"
          )
          Async::Task.current.sleep(0.1)
        end
        pending
      end

      # A stop that came while a round trip was under way signalled no one: it must not wait out a whole poll.
      def wait(seconds)
        @in_vain = false
        return if @state == :stopped
        Async::Task.current.with_timeout(seconds) { @changed.wait }
      rescue Async::TimeoutError
        nil
      end

      # Waits out a back-off; only a stop cuts it short.
      def pause(seconds)
        deadline = now + seconds
        wait(deadline - now) while @state != :stopped && now < deadline
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end

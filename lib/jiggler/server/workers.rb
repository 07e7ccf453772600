# frozen_string_literal: true

require "async/task"
require_relative "failure"
require_relative "processor"

module Jiggler
  module Server
    # A fixed set of worker fibers, started once and reused for every job. Fetched jobs are handed to idle workers;
    # each finished job is reported to the fetcher, which acknowledges it with the next fetch.
    class Workers
      # Jobs that run shorter than this on average are short: the fetcher takes some ahead of the free workers, so
      # that a worker finds its next job waiting instead of waiting a round trip. Longer ones are not held back from
      # other processes: a job behind a busy worker waits a whole run, where a round trip costs a millisecond.
      SHORT_RUN = 0.05
      # The weight of the latest run in the moving average of run times.
      RUN_WEIGHT = 0.1

      attr_reader :concurrency

      # @parameter concurrency [Integer] how many jobs run at once.
      # @parameter processor [Processor] runs one job.
      def initialize(concurrency:, processor:)
        @concurrency = concurrency
        @processor = processor
        @jobs = []
        # The fibers of idle workers, parked until a job comes: resumed through the scheduler directly, which costs
        # less per job than a Notification each (no waiter list or signal objects).
        @idle = []
        # Per worker: the job it runs (nil when idle) and when it started. Updated in place for every job; the Hash
        # that `current_jobs` returns is built only when asked for.
        @slots = Array.new(concurrency)
        @started = Array.new(concurrency)
        @busy = 0
        @mean_run = 0.0
        @stopping = false
        @tasks = []
      end

      # Starts the worker fibers.
      # @parameter parent [Async::Task]
      # @parameter reporter [#done, #isolate, #moved] told of every finished job as `done(fetched, failure_or_nil)`, of
      #   a suspect the processor would not run beside other jobs as `isolate(fetched)`, and of a job that left flight
      #   to wait for its limit (not to be acknowledged) as `moved(fetched)`.
      def start(parent:, reporter:)
        @reporter = reporter
        @tasks = Array.new(@concurrency) do |index|
          parent.async(annotation: "jiggler.worker.#{index}") { run(index) }
        end
      end

      # Hands fetched jobs to the workers, waking idle ones one at a time: each starts its job at once, the caller
      # waiting its turn, so that the event loop reads its sockets between one start and the next. A job whose first
      # I/O comes early (a connect) then hears back before the next job starts; woken together, every job of a fetch
      # started before the loop read any socket, and each connect waited for all the others' starts (15-37 ms for 100
      # HTTP jobs here: bench/README.md, "Jobs started in turn").
      # @parameter jobs [Array(Store::Fetched)]
      def assign(jobs)
        @jobs.concat(jobs)
        woken = @idle.shift(jobs.size)
        while (fiber = woken.shift)
          Fiber.scheduler.resume(fiber)
        end
      ensure
        # The caller was stopped while it waited its turn: the rest wake when the event loop comes round.
        woken&.each { |fiber| Fiber.scheduler.push(fiber) }
      end

      # How many more jobs the workers can take without anything waiting.
      def free = @concurrency - @busy - @jobs.size

      # The jobs running now, by handle (as a String, a JSON key): queue, payload and start time (epoch seconds).
      # @returns [Hash] a new one, safe to read from another thread.
      def current_jobs
        @slots.each_with_index.with_object({}) do |(job, index), jobs|
          run_at = @started[index]
          # Read from another thread, a worker may move on between the two reads; a job still in its slot after
          # them started at `run_at` (each Fetched is run once, and its start is written before it).
          next unless job && @slots[index].equal?(job)
          jobs[job.handle.to_s] = {
            "queue" => job.queue,
            "payload" => job.payload,
            "run_at" => run_at
          }
        end
      end

      # The handles of the jobs assigned to the workers, running or waiting.
      def assigned_handles = @slots.compact.map(&:handle) + @jobs.map(&:handle)

      # Takes back the jobs that were assigned but have not started.
      # @returns [Array(Store::Fetched)]
      def drain
        jobs = @jobs.dup
        @jobs.clear
        jobs
      end

      # Lets running jobs finish, waiting at most `timeout` seconds, then stops the rest.
      # @returns [Integer] how many jobs were stopped before they finished.
      # @asynchronous
      def stop(timeout)
        @stopping = true
        @idle.each { |fiber| Fiber.scheduler.push(fiber) }.clear
        Async::Task.current.with_timeout(timeout) { @tasks.each(&:wait) }
        0
      rescue Async::TimeoutError
        unfinished = @busy
        @interrupting = true
        @tasks.each(&:stop)
        unfinished
      end

      # Whether the jobs run lately were short on average (see SHORT_RUN).
      def short_jobs? = @mean_run < SHORT_RUN

      # Whether no job runs or waits for a worker.
      def idle? = @busy.zero? && @jobs.empty?

      # Whether `stop` is interrupting running jobs.
      def interrupting? = @interrupting == true

      private

      def run(index)
        until @stopping
          job = @jobs.shift
          if job
            work(job, index)
          else
            @idle << Fiber.current
            Fiber.scheduler.transfer
          end
        end
      end

      def work(job, index)
        started = @started[index] =
          Process.clock_gettime(Process::CLOCK_REALTIME)
        @slots[index] = job
        @busy += 1
        outcome = process(job)
        @slots[index] = nil
        @busy -= 1
        @mean_run += (
          Process.clock_gettime(Process::CLOCK_REALTIME) - started - @mean_run
        ) * RUN_WEIGHT
        report(job, outcome)
      end

      def report(job, outcome)
        case outcome
        when Processor::DONE then @reporter.done(job, nil)
        when Processor::SUSPECT then @reporter.isolate(job)
        when Processor::WAITING, Processor::COMPLETED then @reporter.moved(job)
        else @reporter.done(job, outcome) # its failure record
        end
      end

      def process(job)
        @processor.call(job)
      # a fault in jiggler itself: the job goes to the dead set with it, rather than stay in flight
      rescue => error
        Failure.malformed(job, error, Time.now.to_f)
      end
    end
  end
end

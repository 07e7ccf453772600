# frozen_string_literal: true

module Jiggler
  class Executor
    # The executor threads. A dispatcher `assign`s a job (items and their futures) once a thread is free; the thread
    # calls the block with the items (or the one item outside batch mode) and settles every future with the block's
    # value or error. Jobs are registered from assignment to completion, so `kill` can tell which futures it dropped.
    class Pool
      # @parameter size [Integer] threads.
      # @parameter batch [Boolean] call the block with the array of items rather than the single item.
      # @parameter logger [Logger | Nil] told of each error the block raises.
      # @parameter block [Proc] the work.
      def initialize(size:, batch:, logger: nil, &block)
        @size = size
        @batch = batch
        @logger = logger
        @block = block
        @jobs = Thread::Queue.new
        @idle = Thread::Queue.new
        size.times { @idle.push(true) }
        @assigned = {}.compare_by_identity
        @mutex = Thread::Mutex.new
        @threads = []
      end

      # Starts the threads.
      # @returns [Pool]
      def start
        @threads = Array.new(@size) do |index|
          thread = Thread.new { work }
          thread.name = "jiggler.executor.worker.#{index}"
          thread
        end
        self
      end

      # Waits for a free thread and hands it the job.
      # @parameter items [Array]
      # @parameter futures [Array(Future)] one for each item.
      # @asynchronous Blocks while every thread is busy.
      def assign(items, futures)
        job = [items, futures]
        @mutex.synchronize { @assigned[job] = true }
        # After `kill` no thread frees up: the job stays registered for `drain`.
        @jobs.push(job) if @idle.pop
      end

      # Lets the threads finish every job assigned, then waits for them to end.
      def close
        @jobs.close
        join(@threads)
      end

      # Stops the threads at once, even in the middle of the block, and stops `assign` from waiting.
      def kill
        @idle.close
        others = @threads - [Thread.current]
        others.each(&:kill)
        join(others)
      end

      # Refuses further jobs.
      # @returns [Array(Future)] the futures of every job assigned but not finished.
      def drain
        @jobs.close
        @mutex.synchronize { @assigned.keys.flat_map(&:last) }
      end

      # @parameter thread [Thread]
      # @returns [Boolean] whether it is one of the pool's threads.
      def member?(thread) = @threads.include?(thread)

      private

      def work
        while (job = @jobs.pop)
          perform(*job)
          @mutex.synchronize { @assigned.delete(job) }
          release
        end
      end

      def perform(items, futures)
        value = @batch ? @block.call(items) : @block.call(items.first)
        settle(futures) { |future| future.resolve(value) }
      # not swallowed: `Future#get` re-raises it to the caller
      rescue Exception => error # rubocop:disable Lint/RescueException
        # Logged too: an item submitted with `submit!` whose future nobody reads would fail without a trace.
        @logger&.error(
          "executor block raised #{error.class}: #{error.message} " \
          "(#{items.size} item#{"s" unless items.size == 1}; " \
          "their futures re-raise it)"
        )
        settle(futures) { |future| future.reject(error) }
      end

      # A `kill` arriving now waits until every future is settled, so no waiter is left half woken.
      def settle(futures, &block)
        Thread.handle_interrupt(Object => :never) { futures.each(&block) }
      end

      def release
        @idle.push(true)
      rescue ClosedQueueError
        nil # killed: nobody waits for a thread any more
      end

      def join(threads)
        threads.each { |thread| thread.join unless thread == Thread.current }
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  class Executor
    # The bounded queue in front of one dispatcher. Producers `push` items (each with its future) and block while the
    # buffer is full; that is the executor's back-pressure. The dispatcher `take`s them as batches.
    #
    # Flush rule: `take` returns as soon as the buffer holds `limit` items (a full batch), or the oldest item has
    # waited `interval` seconds, or the buffer is closed, whichever comes first, with at most `limit` items, oldest
    # first. A full buffer counts as a full batch, so a batch never waits on producers that are themselves waiting
    # for room. With a limit of 1 or an interval of 0, every item is handed over as soon as it arrives.
    class Buffer
      # @parameter capacity [Integer] items held before `push` blocks.
      # @parameter limit [Integer] the most items one `take` returns.
      # @parameter interval [Numeric] seconds the oldest item may wait for its batch to fill.
      def initialize(capacity:, limit:, interval:)
        @capacity = capacity
        @limit = [limit, capacity].min
        @interval = interval
        @timed = interval.positive? && @limit > 1
        @items = []
        @futures = []
        @times = []
        @mutex = Thread::Mutex.new
        @not_empty = Thread::ConditionVariable.new
        @not_full = Thread::ConditionVariable.new
        @wanted = Float::INFINITY
        @blocked = 0
        @state = :open
      end

      # Adds an item, waiting while the buffer is full.
      # @parameter item [Object]
      # @parameter future [Future] settled once the item is processed.
      # @returns [Boolean] false when the buffer was closed (before or while waiting) and the item was not added.
      # @asynchronous Blocks the thread, or only the fiber inside an Async reactor, while the buffer is full.
      def push(item, future)
        @mutex.synchronize do
          wait_for_room while @state == :open && @items.size >= @capacity
          return false unless @state == :open
          @items << item
          @futures << future
          @times << now if @timed
          @not_empty.signal if @items.size >= @wanted
          true
        end
      end

      # Waits for the next batch, following the flush rule above.
      # @returns [Array(Array, Array(Future)) | Nil] the items and their futures; nil once the buffer is closed and
      #   empty, or killed.
      # @asynchronous
      def take
        @mutex.synchronize do
          loop do
            return if @state == :killed || (@state == :closed && @items.empty?)
            delay = flush_delay
            return shift if delay <= 0
            wait_for_items(delay)
          end
        end
      end

      # Refuses new items; `take` hands out what is left without waiting for the interval, then returns nil.
      def close = change_state(:closed)

      # Refuses new items, and `take` returns nil at once; what is left stays for `drain`.
      def kill = change_state(:killed)

      # Empties the buffer.
      # @returns [Array(Future)] the futures of the items that were left.
      def drain
        @mutex.synchronize do
          @items.clear
          @times.clear
          @futures.slice!(0..)
        end
      end

      # @returns [Integer] items waiting in the buffer.
      def size = @mutex.synchronize { @items.size }

      private

      # Seconds until the items held make a batch: 0 when there are enough, the oldest is old enough, or the buffer is
      # closing; infinite while empty.
      def flush_delay
        return Float::INFINITY if @items.empty?
        return 0 if @items.size >= @limit || @state != :open || !@timed
        @times.first + @interval - now
      end

      def wait_for_items(delay)
        # Producers signal only when the waiting dispatcher can act, not on every push.
        @wanted = @items.empty? ? 1 : @limit
        delay.infinite? ?
          @not_empty.wait(@mutex) :
          @not_empty.wait(@mutex, delay)
      ensure
        @wanted = Float::INFINITY
      end

      def wait_for_room
        @blocked += 1
        @not_full.wait(@mutex)
      ensure
        @blocked -= 1
      end

      def shift
        count = [@items.size, @limit].min
        @times.shift(count) if @timed
        [count, @blocked].min.times { @not_full.signal }
        [@items.shift(count), @futures.shift(count)]
      end

      def change_state(state)
        @mutex.synchronize do
          @state = state unless @state == :killed
          @not_empty.broadcast
          @not_full.broadcast
        end
        nil
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end

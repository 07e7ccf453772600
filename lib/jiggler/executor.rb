# frozen_string_literal: true

require_relative "error"

# Opened before its parts, which reopen it (see the autoloads in lib/jiggler.rb).
module Jiggler
  class Executor; end
end

require_relative "executor/options"
require_relative "executor/future"
require_relative "executor/buffer"
require_relative "executor/pool"
require_relative "executor/dispatcher"

module Jiggler
  # An in-process producer-consumer executor with a thread pool, made for processing many small items, one at a time
  # or in batches (the API of the proco gem). Clients `submit` items from any thread, or from fibers inside an Async
  # reactor; each item goes, round robin, into one of `queues` bounded buffers; each buffer's dispatcher thread hands
  # the items to one of `threads` executor threads, which runs the block given to `start`.
  #
  # In batch mode the block gets an array of items. A buffer flushes a batch when it holds `batch_size` items, or when
  # its oldest item has waited `interval` seconds, whichever comes first, and flushes whatever is left on `exit`.
  # While every executor thread is busy, items gather into bigger batches (up to `batch_size`); a full buffer
  # (`queue_size` items) makes `submit` and `submit!` wait: that is the back-pressure.
  #
  # With the defaults (one queue, one thread) items are processed strictly in the order they were submitted.
  #
  #   executor = Jiggler::Executor.interval(0.1).threads(4).batch(true).new
  #   executor.start { |items| Record.insert_all(items) }
  #   future = executor.submit!(row)
  #   future.get # once the batch holding row is written
  #   executor.exit
  #
  # The executor threads are plain Ruby threads; Async is not needed.
  class Executor
    # Raised when the executor is used out of order: `submit`, `exit` or `kill` before `start`, or `start` while it
    # runs. A RuntimeError, as proco raises.
    class StateError < RuntimeError
      def initialize(message = "not running: call start first") = super
    end

    # Raised by `submit` and `submit!` once `exit` or `kill` has been called (until `start` is called again).
    class ClosedError < StateError
      def initialize(
        message = "the executor has exited and accepts no more items"
      )
        super
      end
    end

    # Raised by `Future#get` for an item that `kill` dropped before it was processed.
    class KilledError < Error
      def initialize(
        message = "the executor was killed before this item was processed"
      )
        super
      end
    end

    class << self
      # Starts a chain of option initializers; see Options for each one.
      # @parameter count [Integer] executor threads in the pool.
      # @returns [Options] call `new` on it for the executor.
      def threads(count) = Options.new.threads(count)

      # @parameter count [Integer] queues, each with its own dispatcher thread.
      # @returns [Options]
      def queues(count) = Options.new.queues(count)

      # @parameter size [Integer] items each queue holds before submitting blocks.
      # @returns [Options]
      def queue_size(size) = Options.new.queue_size(size)

      # @parameter seconds [Numeric] in batch mode, the longest an item waits for its batch to fill.
      # @returns [Options]
      def interval(seconds) = Options.new.interval(seconds)

      # @parameter enabled [Boolean] hand the block arrays of items.
      # @returns [Options]
      def batch(enabled) = Options.new.batch(enabled)

      # @parameter size [Integer | Nil] the most items in one batch.
      # @returns [Options]
      def batch_size(size) = Options.new.batch_size(size)

      # @parameter logger [Logger | Nil] where the executor logs its own warnings and errors.
      # @returns [Options]
      def logger(logger) = Options.new.logger(logger)
    end

    # @returns [Hash] the settings, defaults included.
    attr_reader :options

    # @parameter options [Hash] `threads:` (1), `queues:` (1), `queue_size:` (1000), `interval:` (0 seconds),
    #   `batch:` (false), `batch_size:` (nil: up to a whole queue), `logger:` (nil: no logging).
    # @raises [TypeError] for a value of the wrong type.
    # @raises [ArgumentError] for an unknown option, a value out of range or a batch that is not true or false.
    def initialize(**options)
      @options = Options.new(**options).to_h
      @logger = @options[:logger]
      @state = :created
      @mutex = Thread::Mutex.new
      @cursor = 0
    end

    # Starts the threads that process submitted items with the block; after `exit` or `kill`, starts it again.
    # @yields {|item| ...} outside batch mode: one item; the value is what `submit` returns for it.
    # @yields {|items| ...} in batch mode: an array of items; the value is what `submit` returns for each of them.
    # @returns [Executor] self.
    # @raises [StateError] while it is running.
    def start(&block)
      unless block
        raise ArgumentError, "start needs a block to process items with"
      end
      @mutex.synchronize do
        if @state == :running
          raise StateError,
            "already running: call exit or kill before starting again"
        end
        build(block)
        @state = :running
      end
      @logger&.debug { "executor started: #{@options.except(:logger)}" }
      self
    end

    # @returns [Boolean] whether it has been started and neither `exit` nor `kill` has been called since.
    def running? = @state == :running

    # Submits an item and waits until it has been processed.
    # @parameter item [Object]
    # @returns [Object] the block's value for the item, or for the batch holding it.
    # @raises [Exception] whatever the block raised.
    # @raises [StateError] before `start`.
    # @raises [ClosedError] after `exit` or `kill`.
    # @asynchronous Blocks the thread, or only the fiber inside an Async reactor.
    def submit(item) = submit!(item).get

    # Submits an item without waiting for it to be processed (waiting only while its queue is full).
    # @parameter item [Object]
    # @returns [Future] whose `get` returns the block's value, or re-raises its error.
    # @raises [StateError] before `start`.
    # @raises [ClosedError] after `exit` or `kill`, or when one of them is called while this waits for room.
    # @asynchronous Blocks the thread, or only the fiber, while the queue is full.
    def submit!(item)
      refuse_item unless @state == :running
      future = Future.new
      raise ClosedError unless next_buffer.push(item, future)
      future
    end

    # Stops accepting items, processes every item already submitted (flushing partial batches at once), and waits for
    # the threads to end. It may be called again (it waits again) and after `kill` (nothing is left to process).
    # @raises [StateError] before `start`, or when called from inside the block, which would wait for itself.
    # @asynchronous
    def exit
      if @pool&.member?(Thread.current)
        raise StateError,
          "exit from inside the executor's block would wait for itself"
      end
      pool, buffers, dispatchers = finish(:exited)
      buffers.each(&:close)
      dispatchers.each(&:join)
      pool.close
      @logger&.debug("executor exited")
      nil
    end

    # Stops at once: the threads are killed, even in the middle of the block, and every item not yet processed is
    # dropped; their futures raise KilledError. Called from inside the block, it drops that block's items too.
    # @raises [StateError] before `start`.
    def kill
      pool, buffers, dispatchers = finish(:killed)
      buffers.each(&:kill)
      pool.kill
      dispatchers.each(&:join)
      dropped = pool.drain + buffers.flat_map(&:drain)
      dropped.each { |future| future.reject(KilledError.new) }
      if dropped.any?
        @logger&.warn(
          "executor killed; #{dropped.size} submitted items were dropped " \
          "unprocessed"
        )
      end
      nil
    end

    # @returns [Boolean] whether `exit` or `kill` has been called.
    def closed? = @state == :exited || @state == :killed

    def inspect
      "#<#{self.class} #{@state} " \
      "#{@options.map { |key, value| "#{key}=#{value.inspect}" }.join(" ")}>"
    end

    private

    def build(block)
      limit =
        @options[:batch] ? @options[:batch_size] || @options[:queue_size] : 1
      @pool = Pool.new(
        size: @options[:threads],
        batch: @options[:batch],
        logger: @logger,
        &block
      ).start
      @buffers = Array.new(@options[:queues]) do
        Buffer.new(
          capacity: @options[:queue_size],
          limit: limit,
          interval: @options[:interval]
        )
      end
      @dispatchers = @buffers.each_with_index.map do |buffer, index|
        Dispatcher.new(buffer, @pool, logger: @logger).start(index)
      end
    end

    # Moves to a final state (killed stays killed).
    # @returns [Array(Pool, Array(Buffer), Array(Dispatcher))] the threads of this run, which a `start` after this
    #   does not touch.
    # @raises [StateError] before the first `start`.
    def finish(state)
      @mutex.synchronize do
        raise StateError if @state == :created
        @state = state unless @state == :killed
        [@pool, @buffers, @dispatchers]
      end
    end

    def refuse_item
      raise ClosedError if closed?
      raise StateError, "not running: call start before submitting items"
    end

    # Round robin. Two threads may now and then pick the same buffer; that only evens out less well.
    def next_buffer
      return @buffers.first if @buffers.size == 1
      @cursor = (@cursor + 1) % @buffers.size
      @buffers[@cursor]
    end
  end
end

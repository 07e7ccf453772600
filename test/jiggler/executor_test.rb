# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"
require "logger"
require "stringio"
require "jiggler/executor"

module ExecutorTest
  # Lets `count` threads through only together: `enter` returns true once that many are inside at the same time, or
  # false after `timeout` seconds.
  class Barrier
    def initialize(count, timeout: 5)
      @count = count
      @timeout = timeout
      @inside = 0
      @mutex = Thread::Mutex.new
      @changed = Thread::ConditionVariable.new
    end

    def enter
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @timeout
      @mutex.synchronize do
        @inside += 1
        @changed.broadcast
        until @inside >= @count
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          return false if left <= 0
          @changed.wait(@mutex, left)
        end
        true
      end
    end
  end
end

describe Jiggler::Executor do
  before { @executors = [] }
  after do
    @executors.each do |executor|
      executor.kill if executor.running? || executor.closed?
    end
  end

  # Registers an executor to be killed after the test, whatever happens.
  def track(executor) = executor.tap { @executors << executor }

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Waits for every future to settle, failing the test after 5 s instead of hanging it; returns their values.
  def settle(futures)
    wait_for(timeout: 5, message: "#{futures.size} futures to settle") do
      futures.all?(&:done?)
    end
    futures.map do |future|
      future.get rescue $! # standard:disable Style/RescueModifier
    end
  end

  # Runs Ruby code in a fresh process with lib/ on the load path; returns its exit status and output.
  def run_ruby(code)
    output, status = Open3.capture2e(
      RbConfig.ruby,
      "-w",
      "-Ilib",
      "-e",
      code,
      chdir: File.expand_path("../..", __dir__)
    )
    [status.exitstatus, output]
  end

  describe "the proco README, with Proco replaced" do
    it "runs the quick example" do
      # rubocop:disable Layout/DotPosition, Layout/MultilineMethodCallIndentation
      proco = Jiggler::Executor.interval(0.1).     # Runs every 0.1 second
                    threads(4).      # 4 threads processing items every interval
                    batch(true).new  # Enables batch processing mode
      # rubocop:enable Layout/DotPosition, Layout/MultilineMethodCallIndentation
      track(proco)

      proco.start do |items|
        # Batch-process items and return something
        # ...
      end

      # Synchronous submit
      result = proco.submit rand(1000)
      assert_nil result

      # Asynchronous(!) submit (can block if the queue is full)
      future = proco.submit! rand(1000)

      # Wait until the batch containing the item is processed
      # (Commit notification)
      result = future.get

      # Process remaining submissions and terminate threads
      proco.exit

      assert_nil result
      assert_predicate future, :done?
      assert_equal({
        threads: 4,
        queues: 1,
        queue_size: 1000,
        interval: 0.1,
        batch: true,
        batch_size: nil,
        logger: nil
      }, proco.options)
    end

    it "builds the architecture examples" do
      proco = Jiggler::Executor.new
      assert_equal [1, 1], proco.options.values_at(:threads, :queues)

      proco = Jiggler::Executor.threads(5).queues(4).new
      assert_equal [5, 4], proco.options.values_at(:threads, :queues)

      # Assigns items in batch every second
      proco = Jiggler::Executor.interval(1).batch(true).new
      assert_equal [1, true], proco.options.values_at(:interval, :batch)

      # Jiggler::Executor with 8 executor threads
      proco = Jiggler::Executor.threads(8).new
      assert_equal 8, proco.options[:threads]
    end

    it "initializes by chaining and with an options hash alike" do
      # Initialization with method chaining
      proco = Jiggler::Executor
        .interval(0.1)
        .threads(8)
        .queues(4)
        .queue_size(100)
        .batch(true)
        .batch_size(10)
        .new
      chained = proco.options

      # rubocop:disable Layout/ArgumentAlignment, Layout/HashAlignment, Layout/MultilineMethodCallBraceLayout
      # Traditional initialization with options hash is also allowed
      proco = Jiggler::Executor.new(
                interval:   0.1,
                threads:    8,
                queues:     4,
                queue_size: 100,
                batch:      true,
                batch_size: 10)
      # rubocop:enable Layout/ArgumentAlignment, Layout/HashAlignment, Layout/MultilineMethodCallBraceLayout

      assert_equal chained, proco.options
      assert_equal({
        interval: 0.1,
        threads: 8,
        queues: 4,
        queue_size: 100,
        batch: true,
        batch_size: 10,
        logger: nil
      }, chained)
    end

    it "starts a regular executor, submits and exits" do
      # Regular Jiggler::Executor
      proco = track(Jiggler::Executor.new)
      proco.start do |item|
        # code for single item
      end

      # Synchronous submission
      proco.submit 100

      # Asynchronous(1) submission
      future = proco.submit! 100
      value = future.get

      # Graceful shutdown
      proco.exit

      assert_nil value
      assert_raises(Jiggler::Executor::ClosedError) { proco.submit 100 }
    end

    it "starts an executor in batch mode, submits and kills it" do
      # Jiggler::Executor in batch mode
      proco = track(Jiggler::Executor.batch(true).new)
      proco.start do |items|
        # code for multiple items
      end

      future = proco.submit! 100
      value = future.get

      # Immediately kills all running threads
      proco.kill

      assert_nil value
      assert_raises(Jiggler::Executor::ClosedError) { proco.submit! 100 }
    end

    it "extends one partial chain in several ways, as the benchmark does" do
      proco = Jiggler::Executor.batch_size(100)
      two = proco.threads(2).queues(1).new
      eight = proco.threads(8).queues(4).batch(true).new

      assert_equal [2, 1, false, 100],
        two.options.values_at(:threads, :queues, :batch, :batch_size)
      assert_equal [8, 4, true, 100],
        eight.options.values_at(:threads, :queues, :batch, :batch_size)
      assert_equal Jiggler::Executor::Options::DEFAULTS.merge(batch_size: 100),
        proco.to_h
    end
  end

  describe "submitting" do
    it "returns the block's value for each item" do
      executor = track(
        Jiggler::Executor.threads(2).new.start { |item| item * 2 }
      )
      futures = (1..20).map { |item| executor.submit!(item) }

      assert_equal 42, executor.submit(21)
      assert_equal (1..20).map { |item| item * 2 }, futures.map(&:get)
    end

    it "returns the block's value for the whole batch in batch mode" do
      executor = track(
        Jiggler::Executor.batch(true).batch_size(3).interval(60).new
          .start(&:dup)
      )
      futures = (1..3).map { |item| executor.submit!(item) }

      assert_equal [[1, 2, 3]] * 3, settle(futures)
    end

    it "hands the block's error to the item's future and goes on" do
      executor = track(Jiggler::Executor.new.start { |item|
        (item == 2) ? raise(ArgumentError, "bad #{item}") : item
      })
      futures = (1..3).map { |item| executor.submit!(item) }

      error = assert_raises(ArgumentError) { futures[1].get }
      assert_equal "bad 2", error.message
      assert_equal [1, 3], futures.values_at(0, 2).map(&:get)
      assert_raises(ArgumentError) { executor.submit(2) }
    end

    it "hands a batch's error to every item of the batch" do
      executor = track(
        Jiggler::Executor.batch(true).batch_size(2).interval(60).new
          .start { |items| raise "batch #{items}" }
      )
      futures = [executor.submit!(1), executor.submit!(2)]
      settle(futures)

      futures.each do |future|
        assert_equal "batch [1, 2]",
          assert_raises(RuntimeError) { future.get }.message
      end
    end

    it "hands even a non-standard error, like exit, to the future, " \
      "and keeps its thread" do
      executor = track(Jiggler::Executor.new.start { |item|
        (item == 1) ? Kernel.exit(3) : item
      })

      assert_equal 3, assert_raises(SystemExit) { executor.submit(1) }.status
      assert_equal 2, executor.submit(2)
    end

    it "refuses items before start, and a second start while running" do
      executor = track(Jiggler::Executor.new)

      assert_raises(Jiggler::Executor::StateError) { executor.submit!(1) }
      assert_raises(ArgumentError) { executor.start }
      executor.start { |item| item }
      assert_raises(Jiggler::Executor::StateError) do
        executor.start { |item| item }
      end
    end

    it "processes items in submission order by default" do
      order = []
      executor = track(Jiggler::Executor.new.start { |item| order << item })
      futures = (1..1000).map { |item| executor.submit!(item) }
      futures.last.get

      assert_equal (1..1000).to_a, order
    end

    it "runs the block on several threads at once" do
      barrier = ExecutorTest::Barrier.new(4)
      executor = track(
        Jiggler::Executor.threads(4).new.start { |_item| barrier.enter }
      )
      futures = (1..4).map { |item| executor.submit!(item) }

      assert_equal [true] * 4, futures.map(&:get)
    end

    it "spreads items over several queues, each with a dispatcher" do
      executor = track(
        Jiggler::Executor.threads(2).queues(4).new.start { |item| item * 2 }
      )
      results = (1..100).map { |item| executor.submit!(item) }.map(&:get)
      dispatchers = Thread.list.map(&:name).compact
        .grep(/\Ajiggler\.executor\.dispatcher/)

      assert_equal (1..100).map { |item| item * 2 }, results
      assert_equal 4, dispatchers.size
    end
  end

  describe "batching" do
    it "flushes a batch when it reaches batch_size, and the rest on exit" do
      batches = []
      executor = track(
        Jiggler::Executor.batch(true).batch_size(3).interval(60).new
          .start { |items| batches << items }
      )
      futures = (1..7).map { |item| executor.submit!(item) }
      wait_for(timeout: 5, message: "two full batches") { futures[5].done? }

      refute_predicate futures[6], :done?
      assert Thread.new { executor.exit }.join(5),
        "exit waited for the interval"
      assert_equal [[1, 2, 3], [4, 5, 6], [7]], batches
    end

    it "flushes a partial batch once its oldest item has waited the interval" do
      executor = track(
        Jiggler::Executor.batch(true).interval(0.3).new.start(&:dup)
      )
      started = now
      futures = (1..3).map { |item| executor.submit!(item) }

      assert_equal [[1, 2, 3]] * 3, futures.map(&:get)
      assert_operator now - started, :>=, 0.3
    end

    it "gathers the items that arrive while the threads are busy, " \
      "up to batch_size" do
      gate = Thread::Queue.new
      batches = []
      executor = track(
        Jiggler::Executor.batch(true).batch_size(3).new
          .start { |items| gate.pop || batches << items }
      )
      futures = (1..8).map { |item| executor.submit!(item) }
      gate.close

      settle(futures)
      assert_equal (1..8).to_a, batches.flatten
      assert_equal 3, batches.map(&:size).max
    end
  end

  describe "back-pressure" do
    it "blocks submit! while the queue is full" do
      gate = Thread::Queue.new
      executor = track(
        Jiggler::Executor.queue_size(2).new.start { |item| gate.pop || item }
      )
      accepted = Thread::Queue.new
      producer = Thread.new do
        (1..10).map { |item| executor.submit!(item).tap { accepted << item } }
      end
      # One item runs, one waits in the dispatcher for the thread, two fill the queue.
      wait_for(timeout: 5, message: "a full queue") do
        accepted.size == 4 && producer.status == "sleep"
      end

      refute producer.join(0.2), "submit! returned while the queue was full"
      assert_equal 4, accepted.size
      gate.close
      assert_equal (1..10).to_a, producer.value.map(&:get)
    end
  end

  describe "exit and kill" do
    it "exit processes everything submitted, then refuses more" do
      gate = Thread::Queue.new
      executor = track(Jiggler::Executor.new.start { |item| gate.pop || item })
      futures = (1..5).map { |item| executor.submit!(item) }
      exiting = Thread.new { executor.exit }
      wait_for(timeout: 5, message: "exit to start") { executor.closed? }

      assert_raises(Jiggler::Executor::ClosedError) { executor.submit!(6) }
      gate.close
      exiting.join
      assert_equal (1..5).to_a, futures.map(&:get)
    end

    it "exit flushes a partial batch without waiting for the interval" do
      executor = track(
        Jiggler::Executor.batch(true).interval(60).new.start(&:dup)
      )
      futures = (1..2).map { |item| executor.submit!(item) }
      exiting = Thread.new { executor.exit }

      assert exiting.join(5), "exit waited for the interval"
      assert_equal [[1, 2]] * 2, futures.map(&:get)
    end

    it "exit refuses a submit! that is waiting for room" do
      gate = Thread::Queue.new
      executor = track(
        Jiggler::Executor.queue_size(1).new.start { |item| gate.pop || item }
      )
      accepted = (1..3).map { |item| executor.submit!(item) }
      producer = Thread.new do
        Thread.current.report_on_exception = false
        executor.submit!(4)
      end
      wait_for(timeout: 5, message: "a blocked submit!") do
        producer.status == "sleep"
      end
      exiting = Thread.new { executor.exit }

      assert_raises(Jiggler::Executor::ClosedError) { producer.value }
      gate.close
      exiting.join
      assert_equal [1, 2, 3], accepted.map(&:get)
    end

    it "exit from inside the block raises rather than waiting for itself" do
      executor = track(Jiggler::Executor.new)
      executor.start do
        executor.exit
      rescue Jiggler::Executor::StateError => error
        error
      end

      assert_kind_of Jiggler::Executor::StateError, executor.submit(1)
    end

    it "kill stops the threads at once and fails every pending future" do
      gate = Thread::Queue.new
      started = Thread::Queue.new
      finished = []
      executor = track(Jiggler::Executor.threads(2).new.start { |item|
        started << item && gate.pop && finished << item
      })
      futures = (1..5).map { |item| executor.submit!(item) }
      2.times { started.pop }
      executor.kill
      settle(futures)

      futures.each do |future|
        assert_raises(Jiggler::Executor::KilledError) { future.get }
      end
      assert_empty finished
      assert_empty Thread.list.select { |thread|
        thread.name&.start_with?("jiggler.executor")
      }
      assert_raises(Jiggler::Executor::ClosedError) { executor.submit!(6) }
    end

    it "kill drops a partial batch" do
      executor = track(
        Jiggler::Executor.batch(true).interval(60).new.start(&:dup)
      )
      future = executor.submit!(1)
      executor.kill
      settle([future])

      assert_raises(Jiggler::Executor::KilledError) { future.get }
    end

    it "exit after kill, and either one twice, do nothing more" do
      executor = track(Jiggler::Executor.new.start { |item| item })
      executor.submit(1)

      assert_nil executor.kill
      assert_nil executor.exit
      assert_nil executor.kill
      assert_predicate executor, :closed?
    end
  end

  describe "lifecycle, as proco's" do
    it "raises RuntimeError 'not running' for submit, submit!, exit and kill " \
      "before start, and stays startable" do
      executor = track(Jiggler::Executor.new)

      refute_predicate executor, :running?
      %i[submit submit!].each do |call|
        assert_match(
          /not running/,
          assert_raises(RuntimeError) do
            executor.public_send(call, 1)
          end.message
        )
      end
      %i[exit kill].each do |call|
        assert_match(
          /not running/,
          assert_raises(RuntimeError) do
            executor.public_send(call)
          end.message
        )
      end
      executor.start { |item| item * 2 }
      assert_equal 4, executor.submit(2)
    end

    it "says whether it runs" do
      executor = track(Jiggler::Executor.new)
      executor.start { |item| item }

      assert_predicate executor, :running?
      executor.exit
      refute_predicate executor, :running?
    end

    it "starts again after exit, and after kill, with a new block" do
      executor = track(Jiggler::Executor.threads(2).new)
      executor.start { |item| item + 1 }
      assert_equal 2, executor.submit(1)
      executor.exit

      executor.start { |item| item + 10 }
      assert_predicate executor, :running?
      assert_equal 11, executor.submit(1)
      executor.kill

      executor.start { |item| item + 100 }
      assert_equal 101, executor.submit(1)
      executor.exit
      assert_empty Thread.list.select { |thread|
        thread.name&.start_with?("jiggler.executor")
      }
    end

    it "lets a restart run beside an exit still finishing " \
      "the previous run's items" do
      gate = Thread::Queue.new
      executor = track(Jiggler::Executor.new)
      executor.start { |item| gate.pop || item }
      old = executor.submit!(1)
      exiting = Thread.new { executor.exit }
      wait_for(timeout: 5, message: "exit to start") { executor.closed? }
      executor.start { |item| -item }

      assert_equal(-2, executor.submit(2))
      gate.close
      exiting.join
      assert_equal 1, old.get
    end
  end

  describe "logger" do
    def log_to(io)
      Logger.new(io).tap do |logger|
        logger.formatter =
          ->(severity, _, _, message) { "#{severity} #{message}\n" }
      end
    end

    it "logs the block's errors, with the items' count, " \
      "to the logger given by chaining" do
      log = StringIO.new
      executor = track(
        Jiggler::Executor
          .batch(true)
          .batch_size(2)
          .interval(60)
          .logger(log_to(log))
          .new
      )
      executor.start { |items| raise ArgumentError, "bad #{items}" }
      futures = [executor.submit!(1), executor.submit!(2)]
      settle(futures)

      assert_includes log.string,
        "ERROR executor block raised ArgumentError: bad [1, 2] " \
        "(2 items; their futures re-raise it)"
    end

    it "logs the items a kill drops, to the logger given as a keyword" do
      log = StringIO.new
      gate = Thread::Queue.new
      executor = track(Jiggler::Executor.new(logger: log_to(log)))
      executor.start { |item| gate.pop && item }
      futures = (1..3).map { |item| executor.submit!(item) }
      executor.kill
      settle(futures)

      assert_includes log.string,
        "WARN executor killed; 3 submitted items were dropped unprocessed"
    end

    it "logs nothing without a logger" do
      executor = track(Jiggler::Executor.new.start { |_item| raise "quiet" })

      assert_output("", "") do
        assert_raises(RuntimeError) { executor.submit(1) }
      end
    end
  end

  describe "a program written for proco" do
    it "runs with Proco = Jiggler::Executor: options, logger, lifecycle, " \
      "restart, kill" do
      status, output = run_ruby(<<~'RUBY')
        require "jiggler/executor"
        require "logger"
        require "stringio"
        Proco = Jiggler::Executor

        log = StringIO.new
        proco = Proco.interval(0.1).threads(4).queues(2).queue_size(100)
          .batch(true).batch_size(10).logger(Logger.new(log)).new
        puts "running before start: #{proco.running?}"
        [:exit, :kill].each do |call|
          proco.public_send(call)
        rescue RuntimeError => error
          puts "#{call} before start: #{error.message}"
        end
        begin
          proco.submit(1)
        rescue RuntimeError => error
          puts "submit before start: #{error.message}"
        end

        total = 0
        lock = Mutex.new
        proco.start { |items| lock.synchronize { total += items.inject(:+) } }
        puts "running: #{proco.running?}"
        1000.times { |i| proco.submit!(i) }
        proco.exit
        puts "total: #{total} running: #{proco.running?}"

        count = 0
        proco.start { |items| sleep 5; count += items.length }
        futures = Array.new(100) { |i| proco.submit!(i) }
        proco.kill
        # Every item was dropped: each future raises KilledError (a value, or another error, is not counted).
        killed = futures.count do |future|
          future.get
          false
        rescue Proco::KilledError
          true
        end
        puts "after kill: #{count} #{killed}"
        puts "logged: #{log.string[/dropped unprocessed/]}"

        [[:interval, :str], [:threads, 1.5], [:batch, "yes"]].each do |option, value|
          Proco.public_send(option, value)
        rescue TypeError, ArgumentError => error
          puts "#{option}: #{error.class}"
        end
        begin
          Proco.new(threads: 0)
        rescue ArgumentError
          puts "threads 0: ArgumentError"
        end
      RUBY

      assert_equal 0, status, output
      assert_equal <<~TEXT, output
        running before start: false
        exit before start: not running: call start first
        kill before start: not running: call start first
        submit before start: not running: call start before submitting items
        running: true
        total: 499500 running: false
        after kill: 0 100
        logged: dropped unprocessed
        interval: TypeError
        threads: TypeError
        batch: ArgumentError
        threads 0: ArgumentError
      TEXT
    end
  end

  describe "inside an Async reactor" do
    require "async"

    # Runs the block in Sync on a thread of its own and fails if it does not finish in time, so that a future that
    # blocks the whole thread fails the test instead of hanging it.
    def sync_within(seconds = 5, &block)
      thread = Thread.new { Sync(&block) }
      flunk "the reactor was blocked" unless thread.join(seconds)
      thread.value
    end

    it "lets other fibers run while one waits on a future" do
      gate = Thread::Queue.new
      executor = track(
        Jiggler::Executor.new.start { |item| gate.pop || item * 2 }
      )
      events = []
      value = sync_within do |task|
        future = executor.submit!(21)
        waiter = task.async { events << :waiting && future.get }
        task.async { events << :sibling && gate.close }
        waiter.wait
      end

      assert_equal 42, value
      assert_equal %i[waiting sibling], events
    end

    it "serves synchronous submits from several fibers at once" do
      barrier = ExecutorTest::Barrier.new(4)
      executor = track(
        Jiggler::Executor.threads(4).new.start { |_item| barrier.enter }
      )
      results = sync_within do |task|
        (1..4).map { |item| task.async { executor.submit(item) } }.map(&:wait)
      end

      assert_equal [true] * 4, results
    end

    it "lets other fibers run while submit! waits for room" do
      gate = Thread::Queue.new
      executor = track(
        Jiggler::Executor.queue_size(1).new.start { |item| gate.pop || item }
      )
      futures = sync_within do |task|
        producer = task.async { (1..5).map { |item| executor.submit!(item) } }
        task.async { gate.close }
        producer.wait
      end

      assert_equal (1..5).to_a, futures.map(&:get)
    end
  end

  describe "loading" do
    it "loads with require 'jiggler/executor', without Async" do
      status, output = run_ruby(<<~RUBY)
        require "jiggler/executor"
        executor = Jiggler::Executor.new.start { |item| item + 1 }
        exit(2) unless executor.submit(1) == 2
        executor.exit
        exit(defined?(Async) ? 1 : 0)
      RUBY
      assert_equal 0, status, output
      assert_empty output
    end

    it "loads with require 'jiggler'" do
      status, output = run_ruby(
        'require "jiggler"; exit(defined?(Jiggler::Executor::Future) ? 0 : 1)'
      )
      assert_equal 0, status, output
    end
  end
end

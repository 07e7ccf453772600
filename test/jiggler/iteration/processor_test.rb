# frozen_string_literal: true

require "test_helper"
require "async"
require "logger"
require "jiggler/server/processor"
require "jiggler/server/iterations"
require "jiggler/server/executions"
require "jiggler/store/fetched"

# Iterable jobs as the processor runs them, with a store that records checkpoints and requeues.
module IterationProcessorTest
  DONE = []
  # What the next run does: fail_at, cancel_at or stop_at an item; stop once the server is stopping.
  SETTINGS = {}

  # Records what an Iterations store would be asked.
  class FakeStore
    attr_reader :checkpoints, :requeues, :pushes
    attr_accessor :holding

    def initialize
      @checkpoints = []
      @requeues = []
      @pushes = []
      @holding = true
    end

    def checkpoint(process, handle, payload)
      @checkpoints << [process, handle, Jiggler::Payload.load(payload)]
      @holding
    end

    def requeue(process, jobs)
      @requeues.concat(
        jobs.map { |job|
          [process, job.handle, job.queue, Jiggler::Payload.load(job.payload)]
        }
      )
      jobs.size
    end

    def push(queue, payloads)
      @pushes.concat(
        payloads.map { |payload| [queue, Jiggler::Payload.load(payload)] }
      )
    end
  end

  class Numbers
    include Jiggler::Job
    include Jiggler::Iteration

    job_options checkpoint: {every: 3}

    def build_enumerator(last, cursor:) = enum_range(1, last, cursor: cursor)

    def each_iteration(number, _last)
      if number == IterationProcessorTest::SETTINGS[:fail_at]
        raise ArgumentError, "item #{number} failed"
      end
      if number == IterationProcessorTest::SETTINGS[:cancel_at]
        @execution.cancel("test")
      end
      DONE << number
      if number == IterationProcessorTest::SETTINGS[:stop_at]
        IterationProcessorTest::SETTINGS[:stop] = true
      end
    end

    def on_start = DONE << :start

    def on_resume = DONE << :resume

    def on_stop = DONE << :stop

    def on_complete = DONE << :complete
  end

  # Computes without I/O for 10 ms an item: only the check between items can end it.
  class Busy
    include Jiggler::Iteration

    def build_enumerator(cursor:) = enum_range(1, 1_000, cursor: cursor)

    def each_iteration(_number)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 0.01
      nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    end
  end

  class NotAnEnumerator
    include Jiggler::Iteration

    def build_enumerator(cursor:) = [1, 2, 3]

    def each_iteration(item) = nil
  end

  class NilCursor
    include Jiggler::Iteration

    def build_enumerator(cursor:) = [1, 2].each

    def each_iteration(item) = nil
  end

  class SymbolCursor
    include Jiggler::Iteration

    def build_enumerator(cursor:)
      Enumerator.new { |yielder| yielder.yield(1, :one) }
    end

    def each_iteration(item) = nil
  end
end

describe "an iterable job in the processor" do
  let(:fake) { IterationProcessorTest::FakeStore.new }
  let(:iterations) do
    Jiggler::Server::Iterations.new(
      process: "p-1",
      reliable: true,
      store: -> { fake },
      stopping: -> { IterationProcessorTest::SETTINGS[:stop] == true },
      logger: Logger.new(File::NULL)
    )
  end
  let(:executions) do
    Jiggler::Server::Executions.new(logger: Logger.new(File::NULL))
  end
  let(:processor) do
    Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Logger.new(File::NULL),
      results: fake,
      iterations: iterations,
      executions: executions
    )
  end

  before do
    IterationProcessorTest::DONE.clear
    IterationProcessorTest::SETTINGS.clear
  end

  def payload(name, args, **extra)
    Jiggler::Payload.dump(
      {
        "jid" => "jid-1",
        "name" => name,
        "args" => args,
        "queue" => "default",
        "retries" => 3
      }.merge(extra)
    )
  end

  def run_job(json)
    Sync { processor.call(Jiggler::Store::Fetched.new(7, "default", json)) }
  end

  def numbers = IterationProcessorTest::DONE.grep(Integer)

  it "does every item and checkpoints the cursor in the payload " \
    "every `every` items" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("IterationProcessorTest::Numbers", [10]))
    assert_equal [:start, *1..10, :complete], IterationProcessorTest::DONE
    assert_equal [3, 6, 9], fake.checkpoints.map { |_, _, job| job["cursor"] }
    assert_equal [["p-1", 7]],
      fake.checkpoints.map { |process, handle, _| [process, handle] }.uniq
  end

  it "resumes after the cursor in its payload, " \
    "and a checkpoint past it clears its crashes" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(
        payload(
          "IterationProcessorTest::Numbers",
          [10],
          cursor: 6,
          crashes: 2,
          deaths_beside: 1,
          suspect: true
        )
      )
    assert_equal [:resume, 7, 8, 9, 10, :complete], IterationProcessorTest::DONE
    saved = fake.checkpoints.first.last
    assert_equal 9, saved["cursor"]
    assert_nil saved["crashes"]
    assert_nil saved["deaths_beside"]
    assert_nil saved["suspect"]
  end

  it "stops between two items for a stopping server " \
    "and is requeued at its cursor, no attempt counted" do
    IterationProcessorTest::SETTINGS[:stop_at] = 4
    outcome =
      run_job(payload("IterationProcessorTest::Numbers", [10], attempt: 1))
    assert_equal Jiggler::Server::Processor::WAITING, outcome,
      "it left flight: not to be acknowledged"
    assert_equal [:start, 1, 2, 3, 4, :stop], IterationProcessorTest::DONE
    assert_equal 1, fake.requeues.size
    process, handle, queue, job = fake.requeues.first
    assert_equal ["p-1", 7, "default"], [process, handle, queue]
    assert_equal [4, 1, 1], job.values_at("cursor", "interruptions", "attempt")
  end

  it "is pushed back to its queue without at-least-once delivery, " \
    "and writes no checkpoint" do
    unreliable = Jiggler::Server::Iterations.new(
      process: "p-1",
      reliable: false,
      store: -> { fake },
      stopping: -> { IterationProcessorTest::SETTINGS[:stop] == true },
      logger: Logger.new(File::NULL)
    )
    IterationProcessorTest::SETTINGS[:stop_at] = 5
    outcome = Sync do
      Jiggler::Server::Processor.new(
        config: Jiggler.config,
        logger: Logger.new(File::NULL),
        results: fake,
        iterations: unreliable
      ).call(
        Jiggler::Store::Fetched.new(
          7, "default", payload("IterationProcessorTest::Numbers", [10])
        )
      )
    end
    assert_equal Jiggler::Server::Processor::WAITING, outcome
    assert_empty fake.checkpoints
    assert_equal [["default", 5]],
      fake.pushes.map { |queue, job| [queue, job["cursor"]] }
  end

  it "is retried from the cursor of the last item it finished" do
    IterationProcessorTest::SETTINGS[:fail_at] = 5
    record = run_job(payload("IterationProcessorTest::Numbers", [10]))
    assert_equal :retry, record.set
    assert_equal [4, "ArgumentError"],
      Jiggler::Payload.load(record.payload).values_at("cursor", "error_class")
  end

  it "sees a cancel between two items and ends as cancelled, " \
    "its cursor on it" do
    IterationProcessorTest::SETTINGS[:cancel_at] = 5
    record = run_job(payload("IterationProcessorTest::Numbers", [10]))
    assert_equal :cancelled, record.set
    assert_equal [1, 2, 3, 4, 5], numbers
    assert_equal 5, Jiggler::Payload.load(record.payload)["cursor"]
  end

  it "sees its timeout between two items, even when it never does I/O, " \
    "and is retried from its cursor" do
    record = run_job(payload("IterationProcessorTest::Busy", [], timeout: 0.1))
    job = Jiggler::Payload.load(record.payload)
    assert_equal [:retry, "Jiggler::JobTimeout"],
      [record.set, job["error_class"]]
    assert_includes 5..12, job["cursor"], "about 10 items of 10 ms in 0.1 s"
  end

  it "goes on when a checkpoint finds the job no longer in flight here" do
    fake.holding = false
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("IterationProcessorTest::Numbers", [7]))
    assert_equal [*1..7], numbers
  end

  it "checks the arguments against build_enumerator's" do
    job = Jiggler::Payload.load(
      run_job(payload("IterationProcessorTest::Numbers", [10, 11])).payload
    )
    assert_equal "Jiggler::Server::Processor::ArityError", job["error_class"]
    assert_match(
      /wrong number of arguments for IterationProcessorTest::Numbers#perform \(given 2, expected 1\)/,
      job["error_message"]
    )
  end

  it "fails with a clear error when build_enumerator returns no Enumerator" do
    record = run_job(payload("IterationProcessorTest::NotAnEnumerator", []))
    job = Jiggler::Payload.load(record.payload)
    assert_equal "Jiggler::Iteration::Error", job["error_class"]
    assert_match(
      /build_enumerator must return an Enumerator of \[item, cursor\] pairs \(got \[1, 2, 3\]\)/,
      job["error_message"]
    )
  end

  it "fails with a clear error for a nil cursor or one that JSON cannot hold" do
    job = Jiggler::Payload.load(
      run_job(payload("IterationProcessorTest::NilCursor", [])).payload
    )
    assert_match(
      /must yield \[item, cursor\] pairs with a cursor that is not nil \(got the item 1 with none\)/,
      job["error_message"]
    )
    job = Jiggler::Payload.load(
      run_job(payload("IterationProcessorTest::SymbolCursor", [])).payload
    )
    assert_match(
      /the cursor :one cannot be saved: Symbol is not a JSON type/,
      job["error_message"]
    )
  end

  it "runs to its end outside a server (inline, no delivery)" do
    job = IterationProcessorTest::Numbers.new
    job.perform(4)
    assert_equal [:start, 1, 2, 3, 4, :complete], IterationProcessorTest::DONE
    assert_equal 4, job.cursor
  end

  it "checks its checkpoint option" do
    klass = Class.new { include Jiggler::Iteration }
    assert_equal({every: 10, seconds: 2},
      klass.job_options(checkpoint: {every: 10, seconds: 2})[:checkpoint])
    assert_raises(ArgumentError) { klass.job_options(checkpoint: {every: 0}) }
    assert_raises(ArgumentError) do
      klass.job_options(checkpoint: {seconds: -1})
    end
    assert_raises(ArgumentError) { klass.job_options(checkpoint: {items: 5}) }
    assert_raises(ArgumentError) { klass.job_options(checkpoint: 5) }
  end
end

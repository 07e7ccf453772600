# frozen_string_literal: true

require "test_helper"
require "async"
require "async/queue"
require "io/wait"
require "jiggler/server/workers"
require "jiggler/store/fetched"

module WorkersTest
  # Runs jobs named "sleep:<seconds>", "block" (waits for `release`) or "io" (waits for a pipe that is already
  # readable, as a connect to a local server does), recording starts, ends and fibers.
  class Processor
    attr_reader :events, :fibers

    def initialize
      @events = []
      @fibers = []
      @gate = Async::Queue.new
    end

    def call(fetched)
      token = fetched.handle
      @events << "start:#{token}"
      @fibers << Fiber.current
      kind, seconds = fetched.payload.split(":")
      case kind
      when "block" then @gate.dequeue
      when "io" then ready_io(token)
      else sleep(seconds.to_f)
      end
      @events << "done:#{token}"
      nil
    end

    def ready_io(token)
      IO.pipe do |reader, writer|
        writer.write(".")
        reader.wait_readable
        @events << "io:#{token}"
      end
    end

    def release(count = 1) = count.times { @gate.enqueue(true) }

    def started = @events.count { |event| event.start_with?("start:") }
  end

  # Collects what the workers report.
  class Reporter
    attr_reader :reports

    def initialize = @reports = []

    def done(fetched, failure) = @reports << [fetched.handle, failure]
  end
end

describe Jiggler::Server::Workers do
  let(:processor) { WorkersTest::Processor.new }
  let(:reporter) { WorkersTest::Reporter.new }

  def jobs(count, payload)
    Array.new(count) do |index|
      Jiggler::Store::Fetched.new(index, "default", payload)
    end
  end

  # Starts workers inside a reactor and yields them; stops them afterwards.
  def with_workers(concurrency)
    Sync do |task|
      workers = Jiggler::Server::Workers.new(
        concurrency: concurrency,
        processor: processor
      )
      workers.start(parent: task, reporter: reporter)
      task.with_timeout(10) { yield workers }
    ensure
      workers&.stop(0)
    end
  end

  it "runs as many jobs at once as its concurrency" do
    with_workers(3) do |workers|
      workers.assign(jobs(3, "sleep:0.2"))
      wait_for(message: "3 jobs done") { reporter.reports.size == 3 }
    end
    assert_equal %w[start start start done done done],
      processor.events.map { |event| event.split(":").first }
  end

  it "runs no more jobs at once than its concurrency" do
    with_workers(2) do |workers|
      workers.assign(jobs(3, "block"))
      wait_for(message: "2 jobs started") { processor.started == 2 }
      processor.release
      wait_for(message: "third job started") { processor.started == 3 }
      processor.release(2)
      wait_for(message: "3 jobs done") { reporter.reports.size == 3 }
    end
    assert_equal %w[start:0 start:1 done:0 start:2], processor.events.first(4)
  end

  it "starts a fetch's jobs in turn, the event loop reading its sockets between one start and the next" do
    with_workers(5) do |workers|
      workers.assign(jobs(5, "io"))
      wait_for(message: "5 jobs done") { reporter.reports.size == 5 }
    end
    events = processor.events
    # Woken together, all five would start before the first one's I/O was read.
    assert_operator events.index("io:0"), :<, events.index("start:2"), events.inspect
  end

  it "reuses its fibers for every job" do
    with_workers(2) do |workers|
      workers.assign(jobs(6, "sleep:0"))
      wait_for(message: "6 jobs done") { reporter.reports.size == 6 }
    end
    assert_equal 2, processor.fibers.uniq.size
  end

  it "reports each finished job with nil for success" do
    with_workers(2) do |workers|
      workers.assign(jobs(2, "sleep:0"))
      wait_for(message: "2 jobs done") { reporter.reports.size == 2 }
    end
    assert_equal [[0, nil], [1, nil]], reporter.reports.sort
  end

  it "counts free workers as concurrency minus running and waiting jobs" do
    with_workers(3) do |workers|
      assert_equal 3, workers.free
      workers.assign(jobs(2, "block"))
      assert_equal 1, workers.free
      wait_for(message: "2 jobs started") { processor.started == 2 }
      assert_equal 1, workers.free
      processor.release(2)
      wait_for(message: "all workers free") do
        reporter.reports.size == 2 && workers.free == 3
      end
    end
  end

  it "gives each running job its queue, payload and start time, " \
    "and forgets it when done" do
    with_workers(2) do |workers|
      before = Time.now.to_f
      workers.assign([Jiggler::Store::Fetched.new(7, "mailers", "block")])
      wait_for(message: "job started") { processor.started == 1 }
      assert_equal ["7"], workers.current_jobs.keys
      job = workers.current_jobs.fetch("7")
      assert_equal %w[mailers block], job.values_at("queue", "payload")
      assert_instance_of Float, job["run_at"]
      assert_includes before..Time.now.to_f, job["run_at"]
      processor.release
      wait_for(message: "job done") { reporter.reports.size == 1 }
      assert_empty workers.current_jobs
    end
  end

  it "lists the handles of running and waiting jobs as assigned" do
    with_workers(1) do |workers|
      workers.assign(jobs(3, "block"))
      wait_for(message: "first job started") { processor.started == 1 }
      assert_equal [0, 1, 2], workers.assigned_handles
      processor.release
      wait_for(message: "second job started") { processor.started == 2 }
      assert_equal [1, 2], workers.assigned_handles
      processor.release(2)
      wait_for(message: "all done") { reporter.reports.size == 3 }
      assert_empty workers.assigned_handles
    end
  end

  it "lists only whole, running jobs when read from another thread " \
    "while jobs come and go" do
    seen = []
    with_workers(4) do |workers|
      reader = Thread.new do
        until reporter.reports.size == 300
          seen.concat(workers.current_jobs.to_a) if seen.size < 1000
          Thread.pass
        end
      end
      workers.assign(
        Array.new(300) do |index|
          Jiggler::Store::Fetched.new(index, "default", "sleep:0.001:#{index}")
        end
      )
      wait_for(message: "300 jobs done") { reporter.reports.size == 300 }
      reader.join
    end
    refute_empty seen
    seen.each do |handle, job|
      assert_equal "sleep:0.001:#{handle}", job["payload"]
      assert_equal "default", job["queue"]
      assert_instance_of Float, job["run_at"]
    end
  end

  it "drains the jobs that have not started, and does not run them" do
    with_workers(1) do |workers|
      assigned = jobs(3, "block")
      workers.assign(assigned)
      wait_for(message: "first job started") { processor.started == 1 }
      assert_equal assigned.drop(1), workers.drain
      processor.release
      wait_for(message: "first job done") { reporter.reports.size == 1 }
      assert_equal 0, workers.stop(5)
    end
    assert_equal %w[start:0 done:0], processor.events
  end

  it "stops after running jobs finish, returning 0" do
    with_workers(2) do |workers|
      workers.assign(jobs(2, "sleep:0.1"))
      wait_for(message: "2 jobs started") { processor.started == 2 }
      assert_equal 0, workers.stop(5)
      assert_equal 2, reporter.reports.size
    end
  end

  it "stops idle workers at once, returning 0" do
    with_workers(3) do |workers|
      assert_equal 0, Async::Task.current.with_timeout(1) { workers.stop(5) }
    end
    assert_empty processor.events
  end

  it "interrupts jobs still running after the timeout and returns how many" do
    with_workers(3) do |workers|
      workers.assign(jobs(2, "block"))
      wait_for(message: "2 jobs started") { processor.started == 2 }
      assert_equal 2, workers.stop(0.1)
    end
    assert_empty reporter.reports
  end
end

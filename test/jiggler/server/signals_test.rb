# frozen_string_literal: true

require "test_helper"
require "json"

# End-to-end tests of how a running server answers TERM, TSTP and a second TERM.
describe "jiggler server signals" do
  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def queue_entries(queue = "default")
    store.queue_entries(queue, limit: 10_000)
  end

  def in_flight_keys = redis.call("KEYS", "{#{@namespace}}:in_flight:*")

  def started(count)
    wait_for(message: "#{count} jobs to start") do
      recorded.count { |entry| entry.start_with?("start:") } == count
    end
  end

  # Sends a signal and returns the exit status and how long the server took to exit.
  def signal_and_wait(server, signal, timeout:)
    sent = now
    server.signal(signal)
    status = server.wait(timeout: timeout)
    [status, now - sent]
  end

  it "exits 0 at once on TERM when idle, and unregisters" do
    server = start_server("-t", "1")
    assert_equal 1, Jiggler.summary["processes"].size
    status, took = signal_and_wait(server, "TERM", timeout: 5)
    assert_equal 0, status, server.log
    assert_operator took, :<, 2, "an idle server should stop quickly"
    assert_empty Jiggler.summary["processes"]
    assert_match(/stopped: 0 jobs interrupted/, server.log)
  end

  it "exits 0 on INT too" do
    server = start_server("-t", "1")
    status, = signal_and_wait(server, "INT", timeout: 5)
    assert_equal 0, status
    assert_empty Jiggler.summary["processes"]
  end

  it "puts jobs still running after the timeout back in their queues, " \
    "exactly once" do
    SlowJob.with_options(queue: "one")
      .enqueue_bulk([["a", 30], ["b", 30]])
    SlowJob.with_options(queue: "two").enqueue("c", 30)
    originals = {
      "one" => queue_entries("one").sort,
      "two" => queue_entries("two")
    }
    server = start_server("-c", "3", "-t", "1", "-q", "one", "-q", "two")
    started(3)
    assert_empty Jiggler.summary["queues"]
    status, took = signal_and_wait(server, "TERM", timeout: 1 + 5)
    assert_equal 0, status, "should exit 0 within timeout + 5 s"
    assert_operator took, :>=, 0.9,
      "should wait for the jobs up to the timeout"
    assert_equal({"one" => 2, "two" => 1}, Jiggler.summary["queues"])
    assert_equal originals,
      {"one" => queue_entries("one").sort, "two" => queue_entries("two")},
      "the interrupted jobs, unchanged, once each, in their own queues"
    assert_empty in_flight_keys
    assert_empty Jiggler.summary["processes"]
    refute recorded.any? { |entry| entry.start_with?("done:") }
    assert_match(/stopped: 3 jobs interrupted/, server.log)
  end

  it "runs the requeued jobs again on the next start" do
    SlowJob.enqueue_bulk([["a", 30], ["b", 0.1]])
    server = start_server("-c", "1", "-t", "1")
    started(1)
    status, = signal_and_wait(server, "TERM", timeout: 6)
    assert_equal 0, status
    assert_equal 2, queue_entries.size,
      "the interrupted job and the one never started"
    start_server("-c", "2")
    wait_for(message: "both jobs started again") do
      recorded.count { |entry| entry.start_with?("start:") } == 3
    end
    wait_for(message: "the short job done") { recorded.include?("done:b") }
    assert_equal ["done:b", "start:a", "start:a", "start:b"], recorded.sort
  end

  it "lets jobs that end within the timeout finish, " \
    "and requeues nothing" do
    SlowJob.enqueue_bulk([["a", 0.5], ["b", 0.5]])
    server = start_server("-c", "2", "-t", "5")
    started(2)
    status, took = signal_and_wait(server, "TERM", timeout: 10)
    assert_equal 0, status
    assert_operator took, :<, 4,
      "should exit once the jobs are done, not after the whole timeout"
    assert_equal %w[done:a done:b],
      recorded.select { |entry| entry.start_with?("done:") }.sort
    assert_empty queue_entries
    assert_empty in_flight_keys
    assert_equal 2, Jiggler.summary["processed_count"]
  end

  it "stops fetching on TSTP but finishes running jobs and stays " \
    "registered" do
    server = start_server("-c", "2", "-t", "1")
    SlowJob.enqueue("running", 0.5)
    started(1)
    server.signal("TSTP")
    wait_for(message: "the quiet log line") { server.log.include?("quiet:") }
    RecordJob.enqueue("after-quiet")
    wait_for(message: "the running job done") do
      recorded.include?("done:running")
    end
    # The finished job is acknowledged in the same round trip that would fetch new work.
    wait_for(message: "the running job acknowledged") do
      Jiggler.summary["processed_count"] == 1
    end
    refute_includes recorded, "after-quiet"
    assert_equal({"default" => 1}, Jiggler.summary["queues"])
    assert server.running?
    assert_equal [server.pid.to_s],
      Jiggler.summary["processes"].values.map { |info| info["pid"] }

    status, = signal_and_wait(server, "TERM", timeout: 6)
    assert_equal 0, status
    assert_equal [RecordJob.name],
      queue_entries.map { |payload| JSON.parse(payload)["name"] }
    assert_empty Jiggler.summary["processes"]
  end

  it "stops at once on a second TERM during the shutdown wait, " \
    "requeueing the jobs" do
    SlowJob.enqueue_bulk([["a", 30], ["b", 30]])
    originals = queue_entries.sort
    server = start_server("-c", "2", "-t", "20")
    started(2)
    server.signal("TERM")
    wait_for(message: "the stopping log line") do
      server.log.include?("stopping:")
    end
    status, took = signal_and_wait(server, "TERM", timeout: 10)
    assert_equal 0, status
    assert_operator took, :<, 5,
      "the second TERM should not wait for the 20 s timeout"
    assert_match(/stopped: 2 jobs interrupted/, server.log)
    assert_equal originals, queue_entries.sort
    assert_empty in_flight_keys
    refute recorded.any? { |entry| entry.start_with?("done:") }
  end

  it "loses no job when stopped midway" do
    values = (1..2000).map(&:to_s)
    RecordJob.enqueue_bulk(values.zip)
    first = start_server("-c", "5", "-t", "1")
    wait_for(message: "some jobs run") do
      redis.call("LLEN", "#{@namespace}:recorded") >= 100
    end
    status, = signal_and_wait(first, "TERM", timeout: 6)
    assert_equal 0, status
    done_by_first = recorded.size
    assert_operator done_by_first, :<, 2000,
      "the first server should be stopped before it ran every job"
    assert_empty in_flight_keys
    assert_equal 2000 - done_by_first, queue_entries.size,
      "every job not run is back in the queue"

    start_server("-c", "5")
    wait_for(message: "every value recorded") { recorded.uniq.size == 2000 }
    assert_equal values.sort, recorded.uniq.sort
  end
end

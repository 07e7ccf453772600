# frozen_string_literal: true

require_relative "helper"
require "jiggler/server/fetcher"

# Stopping and quieting: TERM puts what did not finish within `timeout` back in its queue exactly once; a stopping
# process always exits within timeout + 5 s, even with a job that holds the reactor or with its store unreachable; a
# quiet process (TSTP) keeps its jobs, and keeps beating, however long they run. (With the SQLite file locked at TERM:
# sqlite_faults_test.rb.)
module ShutdownTest
  def queue_entries(queue) = store.queue_entries(queue, limit: 1_000)

  # Sends TERM and returns the exit status and the seconds until the process exited.
  def terminate(server, timeout:)
    sent = now
    server.signal(:TERM)
    status = server.wait(timeout: timeout + 2)
    [status, now - sent]
  end
end

StoreTarget.describe_each("shutdown and quiet") do
  include ReliabilityHelper
  include ShutdownTest

  it "puts the jobs still running after the timeout back in their queue " \
    "exactly once, while other processes reap" do
    # Another process, with a reaper checking every 0.2 s, runs the whole time on another queue.
    other = start_reliable("-q", "other", recovery_timeout: 1)
    Reliability::SleepJob.with_options(queue: "long")
      .enqueue_bulk([["a", 60], ["b", 60], ["c", 60]])
    originals = queue_entries("long").sort
    server = start_reliable(
      "-c", "5", "-t", "1", "-q", "long", recovery_timeout: 1
    )
    wait_for(message: "3 jobs to start") do
      %w[a b c].all? { |value| recorded_count("start:#{value}") == 1 }
    end

    status, took = terminate(server, timeout: 1 + 5)
    assert_equal 0, status, "every job was put back: exit 0"
    assert_operator took, :<, 1 + 5
    assert_equal originals, queue_entries("long").sort,
      "the interrupted jobs, unchanged, once each"
    assert_empty held_by(server)
    assert_equal [server_id(other)], Jiggler.summary["processes"].keys

    # Longer than a registration TTL (0.7 s) plus a reaper interval: nothing may put the jobs back a second time.
    sleep 1.2
    assert_equal originals, queue_entries("long").sort
    refute_match(/reaper: process/, other.log)
  end

  it "exits within timeout + 5 s when a CPU-bound job cannot be interrupted; " \
    "another process recovers the job" do
    server = start_reliable("-c", "2", "-t", "1", recovery_timeout: 2)
    Reliability::BusyJob.enqueue("cpu", 8)
    wait_for(message: "the busy job to start") do
      recorded_count("start:cpu") == 1
    end

    # TERM at once: the job holds the reactor for 8 s, and the exit must come before it ends (a busy machine may take
    # seconds to boot another server, so the rescuer starts after).
    status, took = terminate(server, timeout: 1 + 5)
    puts format(
      "\nTERM with a CPU-bound job on %s (timeout 1 s): " \
        "exited with status %p after %.1f s",
      target_name, status, took
    )
    refute_nil status, "the process should have exited within timeout + 5 s"
    assert_operator took, :<, 1 + 5
    assert_equal 1, status, "a forced exit is a failure"
    assert_match(/did not stop within/, server.log)

    rescuer = start_reliable("-c", "2", recovery_timeout: 2)
    wait_for(
      timeout: 5,
      message: "the job to run again on the other process"
    ) { recorded_count("start:cpu") == 2 }
    held = held_jobs(rescuer)
    assert_equal [["cpu", 1]],
      held.map { |job| [job["args"].first, job["crashes"]] },
      "recovered once, as a crash"
    assert_empty queue_entries("default")
  end

  it "never lets another process take the jobs of a quiet process, " \
    "however long they run" do
    quiet = start_reliable("-c", "2", recovery_timeout: 2)
    # longer than recovery_timeout, and than the registration TTL (1.3 s)
    Reliability::SleepJob.enqueue("long", 3)
    wait_for(message: "the long job to start") do
      recorded_count("start:long") == 1
    end
    quiet.signal(:TSTP)
    wait_for(message: "the quiet log line") { quiet.log.include?("quiet:") }
    other = start_reliable("-c", "2", recovery_timeout: 2)
    Reliability::RecordJob.enqueue("after-quiet")
    wait_for(message: "the other process to run the new job") do
      recorded_count("run:after-quiet") == 1
    end

    wait_for(message: "the long job to finish") do
      recorded_count("done:long") == 1
    end
    wait_for(message: "its acknowledgement") do
      Jiggler.summary["processed_count"] == 2
    end
    assert_equal 1, recorded_count("start:long"), "the long job ran once"
    refute_match(
      /reaper: process/, other.log,
      "the quiet process was never taken for dead"
    )
    assert_equal [server_id(quiet), server_id(other)].sort,
      Jiggler.summary["processes"].keys.sort
    assert_empty held_by(quiet)

    status, = terminate(quiet, timeout: 5)
    assert_equal 0, status
    assert_equal [server_id(other)], Jiggler.summary["processes"].keys
  end
end

describe "shutdown with Redis faults" do
  include ReliabilityHelper
  include ShutdownTest

  it "stops at once on TERM while it waits in Redis for a push, " \
    "and takes no job once quiet there" do
    server = start_reliable("-c", "2", "-t", "1")
    wait_for(message: "a wait in Redis") do
      redis.call("CLIENT", "LIST").include?(" cmd=blmove ")
    end
    server.signal(:TSTP)
    wait_for(message: "the quiet log line") { server.log.include?("quiet:") }
    Reliability::RecordJob.enqueue("after-quiet")
    sleep 0.5
    assert_equal 0, recorded_count("run:after-quiet"),
      "a quiet server takes no job"

    status, took = terminate(server, timeout: 1)
    assert_equal 0, status
    assert_operator took, :<, Jiggler::Server::Fetcher::IDLE_POLL / 2,
      "the wait in Redis (up to IDLE_POLL) was cut short"
    assert_equal({"default" => 1}, Jiggler.summary["queues"])
    assert_empty held_by(server)
  end

  it "puts its jobs back and exits 0 when Redis dropped its connections " \
    "just before the TERM" do
    Reliability::SleepJob.with_options(queue: "long")
      .enqueue_bulk([["a", 60], ["b", 60]])
    originals = queue_entries("long").sort
    server = start_reliable("-c", "2", "-t", "1", "-q", "long")
    wait_for(message: "2 jobs to start") do
      %w[a b].all? { |value| recorded_count("start:#{value}") == 1 }
    end
    killed = redis.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    assert_operator killed, :>=, 1
    # the kill dropped this process's client too: a new one
    Jiggler.configure { |config| config[:namespace] = @namespace }

    status, = terminate(server, timeout: 1 + 5)
    assert_equal 0, status,
      "the requeue retries on a new connection:\n#{server.log}"
    assert_equal originals, queue_entries("long").sort
    assert_empty held_by(server)
  end

  it "exits within timeout + 5 s when Redis is down, " \
    "and the jobs it could not put back are recovered once" do
    own = start_own_redis
    server = start_reliable(
      "-c", "2", "-t", "1", redis_url: own.url, recovery_timeout: 2
    )
    Reliability::SleepJob.enqueue_bulk([["a", 60], ["b", 60]])
    wait_for(message: "2 jobs to start") do
      %w[a b].all? { |value| recorded_count("start:#{value}") == 1 }
    end

    own.shutdown
    status, took = terminate(server, timeout: 1 + 5)
    puts format(
      "\nTERM with Redis down (timeout 1 s): " \
        "exited with status %p after %.1f s",
      status, took
    )
    refute_nil status, "the process should have exited within timeout + 5 s"
    assert_operator took, :<, 1 + 5
    assert_equal 1, status, "the jobs could not be put back: exit 1"

    own.start
    reset_client
    rescuer = start_reliable("-c", "5", redis_url: own.url, recovery_timeout: 2)
    # It held both when it went: both come back without a crash, the death noted on each, and run side by side.
    wait_for(timeout: 5, message: "both jobs to run again") do
      %w[a b].all? { |value| recorded_count("start:#{value}") == 2 }
    end
    assert_equal [[nil, nil, 1]] * 2,
      held_jobs(rescuer)
        .map { |job| job.values_at("suspect", "crashes", "deaths_beside") }
    assert_empty held_by(server)
  end
end

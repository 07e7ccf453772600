# frozen_string_literal: true

require_relative "helper"

# A server survives Redis faults: connections cut, Redis restarted, unreachable, stalled. Every loop logs each incident
# once, backs off without spinning and resumes; jobs enqueued after the fault run within about a second; writes that
# failed (acknowledgements, retries) are retried, so no job is lost and no finished job runs again.
#
# Each test runs the server on a Redis of its own (with an append-only file, so that it restarts with its data); the
# jobs' record stays on the suite's shared Redis.
module RedisFaultsTest
  # The server's background loops, as they name themselves in the log.
  LOOPS = ["fetcher", "listener", "scheduler", "reaper", "heartbeat"].freeze
end

describe "Redis faults" do
  include ReliabilityHelper

  before do
    @own = start_own_redis
    @admin = RedisClient.new(url: @own.url, reconnect_attempts: 1)
  end

  after { @admin.close }

  def start_server_on_own(*flags, **options)
    start_reliable(*flags, redis_url: @own.url, **options)
  end

  # Log lines per loop: how many "retrying until it works" and how many "working again".
  def incidents(server)
    RedisFaultsTest::LOOPS.to_h do |name|
      [
        name,
        [
          log_lines(server, /: #{name}: .*retrying until it works/).size,
          log_lines(server, /: #{name}: working again after/).size
        ]
      ]
    end
  end

  # Each loop that failed logs it once, and logs once that it works again (the listener, when it next hears from Redis).
  def assert_each_incident_logged_once(server, fault)
    wait_for(
      timeout: 5,
      message: "every loop that failed to log that it works again"
    ) do
      incidents(server).values.all? { |failed, recovered| failed == recovered }
    end
    incidents(server).each do |name, (failed, _)|
      assert_operator failed, :<=, 1, "#{name} should log #{fault} once at most"
    end
  end

  # Enqueues a job now and returns the seconds until the server ran it.
  def time_to_run(value, queue: "default", since: nil)
    reset_client
    since ||= now
    Reliability::RecordJob.with_options(queue: queue).enqueue(value)
    wait_for(timeout: 10, message: "#{value} to run") do
      recorded_count("run:#{value}") == 1
    end
    now - since
  end

  # Every value's "start:" and "done:" entries, counted.
  def run_counts(values)
    values.to_h do |value|
      [
        value,
        [recorded_count("start:#{value}"), recorded_count("done:#{value}")]
      ]
    end
  end

  # Stops the test's Redis for a while, then starts it again with its data.
  def redis_down_for(seconds)
    @own.shutdown
    sleep seconds
    @own.start
    reset_client
  end

  # Waits until the queues are empty and the server holds nothing in flight: every job has run, or is lost.
  def settle(server)
    wait_for(timeout: 15, message: "the queues empty and nothing in flight") do
      Jiggler.summary["queues"].empty? && in_flight_of(server).empty?
    end
  end

  def not_done(values)
    done = recorded.to_set
    values.reject { |value| done.include?("done:#{value}") }
  end

  def in_flight_of(server)
    @admin.call("HGETALL", "{#{@namespace}}:in_flight:#{server_id(server)}")
  end

  it "survives connections cut with CLIENT KILL, and runs new jobs at once" do
    # recovery_timeout 5 s: the heartbeat and the reaper use their connections every second, so that every loop
    # meets its cut connection soon.
    server = start_server_on_own("-c", "5", recovery_timeout: 5)
    assert_operator time_to_run("before"), :<, 1
    @admin.call("CLIENT", "KILL", "TYPE", "normal")
    took = time_to_run("after-kill")
    puts format(
      "\nCLIENT KILL TYPE normal: a job enqueued after it ran in %.2f s", took
    )
    assert_operator took, :<, 1,
      "a job enqueued after the connections were cut " \
        "should run within about a second"

    expected = RedisFaultsTest::LOOPS.to_h do |name|
      [name, (name == "listener") ? [0, 0] : [1, 1]]
    end
    wait_for(
      timeout: 8,
      message: "every loop to meet its cut connection and recover: #{expected}"
    ) do
      incidents(server) == expected
    end
    assert server.running?
    assert_operator time_to_run("later"), :<, 1
  end

  # An idle server waits for a push notification, and polls only every 5 s. When its subscription is cut, a push
  # made before it subscribes again is missed: the server should then look at its queues once, not wait for the poll.
  it "runs a job pushed while its subscription was cut within about a second" do
    server = start_server_on_own("-c", "5")
    took = Array.new(2) do |round|
      # A job just run: the fetcher acknowledges it and waits for the next push, for 5 s at most.
      time_to_run("warm-#{round}")
      @admin.call("CLIENT", "KILL", "TYPE", "pubsub")
      time_to_run("after-#{round}")
    end
    puts format(
      "\nCLIENT KILL TYPE pubsub: jobs pushed right after it ran in %s s",
      took.map { |time| time.round(2) }
    )
    assert_operator took.max, :<, 1,
      "a push missed while the subscription was down " \
        "should not wait for the 5 s poll"
    assert server.running?
    listener = wait_for(message: "the listener to log that it works again") do
      failed, recovered = incidents(server)["listener"]
      failed if failed == recovered && failed >= 1
    end
    assert_operator listener, :<=, 2,
      "the listener logs each cut subscription once at most"
  end

  it "survives Redis unreachable for 4 s: logs once per loop, " \
    "does not spin, loses no acknowledgement or retry" do
    # The issue speaks of 30 s; 4 s is long enough for every loop (the slowest, the reaper, runs every 3 s) to fail
    # several times and back off to its longest delay (1 s), and it keeps the default registration TTL (10 s) from
    # expiring: the outage longer than the TTL is the next test.
    server = start_server_on_own("-c", "6")
    values = %w[a b c d]
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 1] })
    failing = Reliability::SlowFailJob.with_options(retries: 5)
      .enqueue_bulk([["x", 1], ["y", 1]])
    wait_for(message: "6 jobs to start") do
      (values + %w[x y]).all? { |value| recorded_count("start:#{value}") == 1 }
    end

    @own.shutdown
    cpu_before = cpu_seconds(server.pid)
    # the jobs finish during the outage; their acknowledgements cannot be written
    sleep 4
    cpu = cpu_seconds(server.pid) - cpu_before
    @own.start
    back = now
    reset_client
    took = time_to_run("after-outage", since: back)

    puts format(
      "\nRedis down 4 s: the server used %.2f s of CPU; " \
        "a job enqueued when Redis was back ran %.2f s after it was",
      cpu, took
    )
    assert_operator cpu, :<, 0.5,
      "the server should not spin while Redis is unreachable"
    # README: every loop "resumes within a second of Redis being back" (measured 0.5 s: the fetcher's back-off).
    assert_operator took, :<, 1.0,
      "a job enqueued when Redis is back should run within a second of it"
    assert server.running?
    wait_for(message: "every loop to work again") do
      incidents(server).values.all? { |_, recovered| recovered == 1 }
    end
    assert_equal RedisFaultsTest::LOOPS.to_h { |name| [name, [1, 1]] },
      incidents(server),
      "each loop logs the outage once and its end once, " \
        "however many times it retried"

    wait_for(message: "the acknowledgements and retries written") do
      in_flight_of(server).empty?
    end
    assert_equal values.to_h { |value| [value, [1, 1]] }, run_counts(values),
      "jobs that finished during the outage do not run again"
    assert_equal %w[x y].to_h { |value| [value, 1] },
      %w[x y].to_h { |value| [value, recorded_count("start:#{value}")] },
      "jobs that failed during the outage do not run again " \
        "before their retry is due"
    retries = set_jobs(:retry)
    assert_equal failing.sort, retries.map { |job| job["jid"] }.sort,
      "each failure written once to the retry set"
    assert_equal [1, 1], retries.map { |job| job["attempt"] }
    summary = Jiggler.summary
    assert_equal [5, 2], summary.values_at("processed_count", "failures_count")
    assert_empty summary["queues"]
  end

  # The issue's 30 s outage is longer than the default registration TTL (10 s). Same here, scaled down:
  # recovery_timeout 5 s (TTL 3.3 s, heartbeat and reaper every second) and a 4.5 s outage. When Redis is back, every
  # registration has expired; each process must beat again before any reaper takes it for dead: none died.
  it "takes no live process for dead after an outage " \
    "longer than the registration TTL" do
    # Four processes with a job each and a free worker, to run at once a job that a reaper would put back in its queue.
    # (Which of a reaper and a heartbeat comes first after the outage is a race; with four processes, a reaper that
    # takes live processes for dead almost surely does it to one of them.)
    servers = Array.new(4) do
      start_server_on_own("-c", "2", recovery_timeout: 5)
    end
    values = %w[a b c d]
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 6] })
    wait_for(message: "4 jobs to start") do
      values.all? { |value| recorded_count("start:#{value}") == 1 }
    end

    redis_down_for(4.5)
    wait_for(timeout: 15, message: "every job to finish") do
      values.all? { |value| recorded_count("done:#{value}") >= 1 }
    end
    wait_for(message: "the acknowledgements written") do
      servers.all? { |server| in_flight_of(server).empty? }
    end

    assert_empty Jiggler.summary["queues"]
    assert_equal values.to_h { |value| [value, [1, 1]] }, run_counts(values),
      "jobs running on live processes should not run a second time"
    servers.each do |server|
      refute_match(/reaper: process/, server.log, "no process died")
    end
    servers.each { |server| assert server.running? }
  end

  it "survives a Redis restart while jobs flow, and loses none" do
    # The job enqueued after the restart goes to a queue of higher priority, so that it waits for no other job.
    server = start_server_on_own("-c", "5", "-q", "urgent,1", "-q", "default")
    values = (1..300).map { |n| "r#{n}" }
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 0.02] })
    wait_for(message: "some jobs to run") { recorded.size >= 50 }
    @own.restart
    back = now
    reset_client
    took = time_to_run("after-restart", queue: "urgent", since: back)
    puts format(
      "\nRedis restart: a job enqueued when Redis was back " \
        "ran %.2f s after it was",
      took
    )
    assert_operator took, :<, 1.0,
      "a job enqueued when Redis is back should run within a second of it " \
        "(measured 0.03 s)"

    settle(server)
    assert_empty not_done(values),
      "every job should have run; these are nowhere any more"
    assert_empty run_counts(values).select { |_, (started, _)| started > 1 },
      "no job runs twice: the acknowledgements that failed " \
        "during the restart are written afterwards"
    assert server.running?
    assert_each_incident_logged_once(server, "the restart")
  end

  # DEBUG SLEEP stalls Redis longer than the client's read timeout (5 s): calls sent during the stall fail on the
  # client side, but Redis still runs them when it wakes up; a fetch that timed out may so have taken jobs.
  it "survives Redis stalled past the read timeout while jobs flow, " \
    "and loses none" do
    server = start_server_on_own("-c", "5", "-q", "urgent,1", "-q", "default")
    values = (1..200).map { |n| "s#{n}" }
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 0.05] })
    wait_for(message: "some jobs to run") { recorded.size >= 20 }
    cpu_before = cpu_seconds(server.pid)
    staller = RedisClient.new(url: @own.url, read_timeout: 10)
    staller.call("DEBUG", "SLEEP", "6")
    back = now
    staller.close
    cpu = cpu_seconds(server.pid) - cpu_before
    took = time_to_run("after-stall", queue: "urgent", since: back)
    puts format(
      "\nRedis stalled 6 s: the server used %.2f s of CPU; " \
        "a job enqueued after the stall ran %.2f s after it",
      cpu, took
    )
    assert_operator cpu, :<, 0.5,
      "the server should not spin while Redis is stalled"
    assert_operator took, :<, 1.0,
      "a job enqueued after the stall should run within a second of its end " \
        "(measured 0.03 s)"

    settle(server)
    assert_empty not_done(values),
      "every job should have run; these are nowhere any more"
    assert_empty run_counts(values).select { |_, (started, _)| started > 1 },
      "no job runs twice: the acknowledgements that failed " \
        "during the stall are written afterwards"
    assert server.running?
    assert_each_incident_logged_once(server, "the stall")
  end
end

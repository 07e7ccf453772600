# frozen_string_literal: true

require "rbconfig"
require "sqlite3"
require_relative "helper"

# The SQLite file's own faults, the counterparts of Redis cut, stalled or down (redis_faults_test.rb): another process
# holds the write lock, briefly or longer than a writer waits (SQLiteFile::LOCK_TIMEOUT, 5 s), at work and at TERM;
# and a process killed with kill -9 in the middle of a write transaction. (Removing the file or making it read-only
# does not reach a running server: it keeps its open file, and root, which runs this suite, ignores modes.)
module SQLiteFaultsTest
  # The server's background loops that write, as they name themselves in the log.
  WRITERS = %w[fetcher scheduler reaper heartbeat].freeze
end

describe "SQLite faults" do
  include ReliabilityHelper

  def target_name = "sqlite"

  def path = @target.path

  # Seconds since the epoch of each of the record's lines with this value.
  def recorded_times(value)
    records.filter_map { |entry, _, at| at if entry == value }
  end

  # Holds the file's write lock from a connection of the test's own for `seconds`, as another application or a
  # long transaction might. @returns [Array(Float, Float)] epoch seconds when the lock was taken and released.
  def hold_write_lock(seconds)
    locker = SQLite3::Database.new(path)
    # the servers write too: wait for their transaction to end before taking the lock
    locker.busy_timeout = 5_000
    locker.execute("BEGIN IMMEDIATE")
    locked_at = Time.now.to_f
    sleep seconds # holding the lock is the point; nothing is being waited for
    [locked_at, Time.now.to_f]
  ensure
    locker&.execute("COMMIT") if locker&.transaction_active?
    locker&.close
  end

  # Log lines per loop: how many "retrying until it works" and how many "working again".
  def incidents(server)
    SQLiteFaultsTest::WRITERS.to_h do |name|
      [
        name,
        [
          log_lines(server, /: #{name}: .*retrying until it works/).size,
          log_lines(server, /: #{name}: working again after/).size
        ]
      ]
    end
  end

  def processed = store.counts[:processed]

  def run_counts(values)
    values.to_h do |value|
      [
        value,
        [recorded_count("start:#{value}"), recorded_count("done:#{value}")]
      ]
    end
  end

  # A write waits for another process's lock by sleeping in Ruby, so the reactor goes on: a job that ticks every 50 ms
  # keeps ticking while another job's enqueue waits 1.5 s for a lock held by this test.
  it "keeps the reactor running while a write waits " \
    "for another process's lock" do
    server = start_reliable("-c", "4")
    Reliability::TickJob.enqueue("t", 4, 0.05)
    Reliability::PushJob.enqueue("p", 4, 0.1)
    wait_for(message: "ticks and pushes") do
      recorded_count("tick:t") > 2 &&
        records.any? { |value, _| value.start_with?("push:p:") }
    end

    locked_at, unlocked_at = hold_write_lock(1.5)
    waits = wait_for(
      timeout: 10,
      message: "an enqueue that waited for the lock"
    ) do
      recorded.filter_map { |value| value[/\Apush:p:(\S+)/, 1]&.to_f }
        .then { |all| all if all.max > 1.0 }
    end
    assert_operator waits.max, :<, 3,
      "the enqueue should go through once the lock is released"
    ticks = wait_for(message: "ticks after the lock") do
      recorded_times("tick:t").then { |all| all if all.max > unlocked_at }
    end
    during = [
      locked_at,
      *ticks.select { |at| at.between?(locked_at, unlocked_at) },
      unlocked_at
    ]
    gaps = during.each_cons(2).map { |first, second| second - first }
    assert_operator gaps.max, :<, 0.6,
      "the reactor stalled for #{gaps.max.round(2)} s " \
        "while a write waited on the lock"
    assert server.running?

    wait_for(timeout: 15, message: "every pushed job to run") do
      pushes = records.count { |value, _| value.start_with?("push:p:") }
      pushes.positive? &&
        records.count { |value, _| value.start_with?("run:p-") } == pushes &&
        processed >= pushes + 2
    end
  end

  # Longer than a writer waits, and than the registration TTL (recovery_timeout 5 s: TTL 3.3 s, heartbeat and reaper
  # every second): every write fails for a while, as with Redis down, while reads go on (WAL). When the lock is
  # released, each process must beat again before any reaper takes it for dead.
  it "survives the write lock held past the lock timeout: " \
    "logs once per loop, does not spin, loses and repeats nothing" do
    servers = Array.new(2) { start_reliable("-c", "4", recovery_timeout: 5) }
    values = %w[a b c d]
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 1] })
    failing = Reliability::SlowFailJob.with_options(retries: 5)
      .enqueue_bulk([["x", 1], ["y", 1]])
    wait_for(message: "6 jobs to start") do
      (values + %w[x y]).all? { |value| recorded_count("start:#{value}") == 1 }
    end

    cpu_before = servers.sum { |server| cpu_seconds(server.pid) }
    # the jobs finish meanwhile; their acknowledgements and retries wait for the lock
    hold_write_lock(7)
    released = now
    cpu = servers.sum { |server| cpu_seconds(server.pid) } - cpu_before
    Reliability::RecordJob.enqueue("after-lock")
    wait_for(timeout: 10, message: "a job enqueued after the lock to run") do
      recorded_count("run:after-lock") == 1
    end
    took = now - released
    puts format(
      "\nSQLite write lock held 7 s: the servers used %.2f s of CPU; " \
        "a job enqueued after it ran %.2f s after its release",
      cpu, took
    )
    # A writer waiting for the lock tries again every 20 ms once it has waited a while (Ruby sleeps between tries, so
    # the reactor goes on): measured 0.36 s for both servers, where trying every millisecond took 1.8 s and spinning
    # would take their whole 7 s.
    assert_operator cpu, :<, 1.0,
      "the servers should not spin while the file is locked"
    # README: the loops resume "within a second" (measured 0.02-0.03 s).
    assert_operator took, :<, 1.0,
      "a job enqueued after the lock should run within a second of its release"

    wait_for(message: "the acknowledgements and retries written") do
      servers.all? { |server| held_by(server).empty? }
    end
    servers.each do |server|
      wait_for(message: "every loop of #{server.pid} to work again") do
        incidents(server).values
          .all? { |failed, recovered| failed == recovered }
      end
      incidents(server).each do |name, (failed, _)|
        assert_operator failed, :<=, 1,
          "#{name} should log the lock once at most"
      end
      refute_match(/reaper: process/, server.log, "no process died")
      assert server.running?
    end
    assert_equal values.to_h { |value| [value, [1, 1]] }, run_counts(values),
      "jobs that finished during the lock do not run again"
    assert_equal failing.sort, set_jobs(:retry).map { |job| job["jid"] }.sort,
      "each failure written once to the retry set"
    assert_equal [5, 2], store.counts.values_at(:processed, :failures)
    assert_empty store.queue_sizes
  end

  it "exits within timeout + 5 s when the file is locked at TERM, " \
    "and the jobs it could not put back are recovered once" do
    server = start_reliable("-c", "2", "-t", "1", recovery_timeout: 2)
    Reliability::SleepJob.enqueue_bulk([["a", 60], ["b", 60]])
    wait_for(message: "2 jobs to start") do
      %w[a b].all? { |value| recorded_count("start:#{value}") == 1 }
    end

    locker = Thread.new { hold_write_lock(8) }
    wait_for(message: "the lock taken") { locked?(path) }
    sent = now
    server.signal(:TERM)
    status = server.wait(timeout: 1 + 5 + 2)
    took = now - sent
    puts format(
      "\nTERM with the SQLite file locked (timeout 1 s): " \
        "exited with status %p after %.1f s",
      status, took
    )
    refute_nil status, "the process should have exited within timeout + 5 s"
    assert_operator took, :<, 1 + 5
    assert_equal 1, status, "the jobs could not be put back: exit 1"
    locker.join

    rescuer = start_reliable("-c", "5", recovery_timeout: 2)
    # It held both when it went: both come back without a crash, the death noted on each, and run side by side.
    wait_for(timeout: 5, message: "both jobs to run again") do
      %w[a b].all? { |value| recorded_count("start:#{value}") == 2 }
    end
    assert_equal [[nil, nil, 1]] * 2,
      held_jobs(rescuer)
        .map { |job| job.values_at("suspect", "crashes", "deaths_beside") }
    assert_empty held_by(server)
  end

  # The enqueue is one transaction: a process killed while writing it leaves all of it or none, and the lock dies
  # with the process, so the servers on the file go on at once.
  it "keeps all or none of an enqueue whose process was killed " \
    "with kill -9 mid-transaction, and the servers go on" do
    server = start_reliable("-c", "2")
    script = <<~RUBY
      require "jiggler"
      require "jiggler/store/sqlite"
      store = Jiggler::Store::SQLite.new(path: ARGV[0])
      payload = Jiggler::Payload.dump({"jid" => "x", \
      "name" => "Reliability::RecordJob", \
      "args" => ["bulk"], "queue" => "bulk"})
      loop { store.push("bulk", Array.new(200_000, payload)) }
    RUBY
    writer = Process.spawn(
      RbConfig.ruby, "-I", File.expand_path("../../../lib", __dir__),
      "-e", script, path
    )
    wait_for(message: "the writer inside its transaction") { locked?(path) }
    Process.kill(:KILL, writer)
    Process.wait(writer)
    writer = nil

    sizes = store.queue_sizes.fetch("bulk", 0)
    assert_equal 0, sizes % 200_000, "whole enqueues only: #{sizes} jobs"
    refute locked?(path), "the lock died with the process"
    Reliability::RecordJob.enqueue("after-kill")
    wait_for(timeout: 5, message: "a job enqueued after the kill to run") do
      recorded_count("run:after-kill") == 1
    end
    assert server.running?
  ensure
    if writer
      Process.kill(:KILL, writer)
      Process.wait(writer)
    end
  end

  # Whether another connection holds the file's write lock now.
  def locked?(file)
    probe = SQLite3::Database.new(file)
    probe.execute("BEGIN IMMEDIATE")
    probe.execute("ROLLBACK")
    false
  rescue SQLite3::BusyException
    true
  ensure
    probe&.close
  end
end

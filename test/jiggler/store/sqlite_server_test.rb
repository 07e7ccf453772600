# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "json"
require "rbconfig"
require "jiggler/store/sqlite"
require_relative "../../fixtures/sqlite_jobs"

# The real `jiggler` executable on the embedded SQLite store (no REDIS_URL in its environment), with this test process
# enqueueing through a Jiggler::Store::SQLite client on the same file: jobs run, several servers share one file, kill -9
# and poison jobs are recovered from, TERM requeues, the history API tells each job's story, and bad files stop the CLI
# with one line.
describe "jiggler on SQLite" do
  before do
    @dir = Dir.mktmpdir("jiggler-sqlite-server")
    @path = File.join(@dir, "jobs.sqlite3")
    @record = File.join(@dir, "record.txt")
    @client_store = Jiggler::Store::SQLite.new(path: @path)
    Jiggler.client = Jiggler::Client.new(@client_store)
    @children = []
  end

  after do
    unless passed?
      @servers.each { |server| warn("--- server #{server.pid} (#{server.running? ? "running" : "exited"}) log:\n#{server.log}") }
      warn("--- record:\n#{File.read(@record)}") if File.exist?(@record)
    end
    @servers.each(&:kill)
    @children.each do |pid|
      Process.kill(:KILL, pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
    @client_store.close
    FileUtils.rm_rf(@dir)
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def fixture = "./test/fixtures/sqlite_jobs.rb"

  # The environment of a server on this test's file: REDIS_URL unset (a nil value unsets it in Process.spawn).
  def sqlite_env(extra = {}) = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path, "SQLITE_JOBS_RECORD_FILE" => @record}.merge(extra)

  # Starts `exe/jiggler -r test/fixtures/sqlite_jobs.rb` with flags on this test's SQLite file.
  def start_sqlite(*flags, env: {}, recovery_timeout: nil, wait: true)
    env = env.merge("SQLITE_JOBS_RECOVERY_TIMEOUT" => recovery_timeout.to_s) if recovery_timeout
    server = ServerProcess.new("-r", fixture, *flags, namespace: @namespace, env: sqlite_env(env)).start
    @servers << server
    wait_until_started(server) if wait
    server
  end

  def wait_until_started(server, timeout: 20)
    wait_for(timeout: timeout, message: "server #{server.pid} to start") { server.log.include?("started:") || !server.running? }
    assert server.running?, "the server did not start:\n#{server.log}"
  end

  # Runs `exe/jiggler` with these arguments until it exits. @returns [Array(Integer, String)] status and output.
  def run_cli(*args, env: {}, timeout: 20)
    process = ServerProcess.new(*args, namespace: @namespace, env: sqlite_env(env)).start
    @servers << process
    status = process.wait(timeout: timeout)
    assert status, "jiggler #{args.join(" ")} did not exit within #{timeout} s:\n#{process.log}"
    [status, process.log]
  end

  def server_id(server) = server.log[/ started: (\S+),/, 1]

  # The record's lines as [value, pid] pairs.
  def records = File.exist?(@record) ? File.readlines(@record).map { |line| line.split.first(2).then { |value, pid| [value, pid.to_i] } } : []

  def recorded(value) = records.count { |entry, _| entry == value }

  # The pids that recorded a value.
  def recorded_by(value) = records.filter_map { |entry, pid| pid if entry == value }

  # Seconds since the epoch of each of the record's lines with this value.
  def recorded_times(value) = File.readlines(@record).filter_map { |line| line.split.then { |entry, _, at| at.to_f if entry == value } }

  def history_types(jid) = @client_store.history(jid).map { |_, event| event["type"] }

  def processed = @client_store.counts[:processed]

  def sql(query, *values) = @client_store.with { |db| db.execute(query, values) }

  describe "one server" do
    it "runs jobs enqueued before and after it starts, names the SQLite file at start, and records each job's history" do
      before_ids = SQLiteJobs::RecordJob.enqueue_bulk([["before-1"], ["before-2"]])
      server = start_sqlite
      assert_match(/started: .*SQLite #{Regexp.escape(File.expand_path(@path))}$/, server.log)
      refute_match(/redis/i, server.log)

      after_id = SQLiteJobs::RecordJob.enqueue("after")
      wait_for(message: "the three jobs to run") { %w[run:before-1 run:before-2 run:after].all? { |value| recorded(value) == 1 } }
      wait_for(message: "the three jobs acknowledged") { processed == 3 }
      assert_equal [server.pid] * 3, records.map(&:last)
      [*before_ids, after_id].each { |jid| assert_equal %w[enqueued started done], history_types(jid) }
      assert_empty @client_store.queue_sizes
      assert_equal [server_id(server)], @client_store.processes.keys
      summary = Jiggler.summary
      assert_equal [3, 0, 0, {}], summary.values_at("processed_count", "failures_count", "dead_jobs_count", "queues")
      assert_equal [server_id(server)], summary["processes"].keys
    end

    it "runs every job enqueued by a web process killed with kill -9 right after it enqueued" do
      script = <<~RUBY
        require "jiggler"
        require "jiggler/store/sqlite"
        require "./test/fixtures/sqlite_jobs"
        Jiggler.client = Jiggler::Client.new(Jiggler::Store::SQLite.new(path: ARGV[0]))
        jids = Array.new(20) { |n| SQLiteJobs::RecordJob.enqueue("web-\#{n}") }
        $stdout.puts jids.join(",")
        $stdout.flush
        Process.kill(:KILL, Process.pid)
      RUBY
      reader, writer = IO.pipe
      pid = Process.spawn(sqlite_env, RbConfig.ruby, "-I", File.expand_path("../../../lib", __dir__), "-e", script, @path,
        out: writer, chdir: ServerProcess::ROOT)
      @children << pid
      writer.close
      assert IO.select([reader], nil, nil, 20), "the web process printed nothing"
      jids = reader.gets.to_s.chomp.split(",")
      wait_for(message: "the web process to die") { Process.wait2(pid, Process::WNOHANG)&.last }
      assert_equal 20, jids.size

      start_sqlite
      wait_for(message: "every job of the killed web process to run") { Array.new(20) { |n| recorded("run:web-#{n}") }.all?(1) }
      wait_for(message: "every job acknowledged") { jids.all? { |jid| history_types(jid) == %w[enqueued started done] } }
    end

    it "records enqueued, started, failed, retried, started, done for a job that failed once" do
      start_sqlite(env: {"SQLITE_JOBS_POLL_INTERVAL" => "0.2"})
      jid = SQLiteJobs::FlakyJob.enqueue("flaky", File.join(@dir, "flaky.marker"))
      wait_for(message: "the job in the retry set") { @client_store.counts[:retry] == 1 }
      assert_equal 1, recorded("fail:flaky")
      # Its retry is due in 15 to 24 s: make it due now.
      sql("UPDATE jobs SET run_at = ? WHERE state = 'retry'", Time.now.to_f - 1)
      wait_for(message: "the retry to run and be acknowledged") { history_types(jid).last == "done" }

      history = @client_store.history(jid)
      assert_equal %w[enqueued started failed retried started done], history.map { |_, event| event["type"] }
      failed = history.find { |_, event| event["type"] == "failed" }.last
      assert_equal({"type" => "failed", "attempt" => 1, "error_class" => "ArgumentError", "error_message" => "failed on purpose: flaky"}, failed)
      times = history.map(&:first)
      assert_equal times.sort, times, "events oldest first"
      assert_equal 1, recorded("run:flaky")
      assert_equal 0, @client_store.counts[:retry]
    end

    it "puts the jobs it is running back in their queue on TERM, and another server runs them" do
      ids = SQLiteJobs::SlowJob.enqueue_bulk([["c", 30], ["d", 30]])
      server = start_sqlite("-c", "2", "-t", "1")
      wait_for(message: "both jobs to start") { recorded("start:c") == 1 && recorded("start:d") == 1 }
      server.signal(:TERM)
      assert_equal 0, server.wait(timeout: 15), "the server should stop within its 1 s timeout:\n#{server.log}"
      assert_match(/stopped: 2 jobs interrupted; unfinished jobs are back in their queues/, server.log)
      assert_equal({"default" => 2}, @client_store.queue_sizes)
      assert_equal 0, sql("SELECT count(*) FROM jobs WHERE state = 'in_flight'").flatten.first
      ids.each { |jid| assert_equal %w[enqueued started requeued], history_types(jid) }
      assert_empty @client_store.processes, "a stopped server unregisters"

      start_sqlite("-c", "2")
      wait_for(message: "both jobs to start again") { recorded("start:c") == 2 && recorded("start:d") == 2 }
      assert_equal 0, recorded("done:c") + recorded("done:d")
    end

    # A write waits for another process's lock by sleeping in Ruby, so the reactor goes on: a job that ticks every 50 ms
    # keeps ticking while another job's enqueue waits 1.5 s for a lock held by this test.
    it "keeps the reactor running while a write waits for another process's lock" do
      server = start_sqlite("-c", "4")
      SQLiteJobs::TickJob.enqueue("t", 4, 0.05)
      SQLiteJobs::PushJob.enqueue("p", 4, 0.1)
      wait_for(message: "ticks and pushes") { recorded("tick:t") > 2 && records.any? { |value, _| value.start_with?("push:p:") } }

      locker = SQLite3::Database.new(@path)
      locker.busy_timeout = 5_000 # the server writes too: wait for its transaction to end before taking the lock
      locker.execute("BEGIN IMMEDIATE")
      locked_at = Time.now.to_f
      sleep 1.5 # holding the lock is the point; nothing is being waited for
      unlocked_at = Time.now.to_f
      locker.execute("COMMIT")
      locker.close

      waits = wait_for(timeout: 10, message: "an enqueue that waited for the lock") do
        File.readlines(@record).filter_map { |line| line[/\Apush:p:(\S+)/, 1]&.to_f }.then { |all| all if all.max > 1.0 }
      end
      assert_operator waits.max, :<, 3, "the enqueue should go through once the lock is released"
      ticks = wait_for(message: "ticks after the lock") { recorded_times("tick:t").then { |all| all if all.max > unlocked_at } }
      during = [locked_at, *ticks.select { |at| at.between?(locked_at, unlocked_at) }, unlocked_at]
      gaps = during.each_cons(2).map { |first, second| second - first }
      assert_operator gaps.max, :<, 0.6, "the reactor stalled for #{gaps.max.round(2)} s while a write waited on the lock"
      assert server.running?

      wait_for(timeout: 15, message: "every pushed job to run") do
        pushes = records.count { |value, _| value.start_with?("push:p:") }
        pushes.positive? && records.count { |value, _| value.start_with?("run:p-") } == pushes && processed >= pushes + 2
      end
    end
  end

  describe "several servers on one file" do
    it "runs every job exactly once while the test enqueues from two connections at once" do
      servers = Array.new(2) { start_sqlite("-c", "5", wait: false) }
      servers.each { |server| wait_until_started(server) }
      options = SQLiteJobs::RecordJob.job_options
      enqueuers = Array.new(2) do |thread|
        Thread.new do
          store = Jiggler::Store::SQLite.new(path: @path)
          client = Jiggler::Client.new(store)
          15.times do |batch|
            client.push("SQLiteJobs::RecordJob", Array.new(20) { |n| ["#{thread}-#{batch}-#{n}", 0.005] }, options)
            sleep 0.01 # enqueue while the servers work, as web processes would
          end
        ensure
          store&.close
        end
      end
      enqueuers.each { |thread| thread.join(30) or flunk("an enqueuer did not finish") }
      values = Array.new(2) { |thread| Array.new(15) { |batch| Array.new(20) { |n| "run:#{thread}-#{batch}-#{n}" } } }.flatten
      wait_for(timeout: 30, message: "600 jobs acknowledged") { processed == 600 }

      counts = records.map(&:first).tally
      assert_equal values.sort, counts.keys.sort, "every job ran"
      assert_equal [1], counts.values.uniq, "no job ran twice: #{counts.select { |_, count| count > 1 }.first(5)}"
      assert_equal servers.map(&:pid).sort, records.map(&:last).uniq.sort, "both servers ran jobs"
      assert_equal [[600, 600, 600]], sql(<<~SQL)
        SELECT count(*), sum(started), sum(done) FROM (SELECT job_id,
          sum(json_extract(event, '$.type') = 'started') AS started, sum(json_extract(event, '$.type') = 'done') AS done
          FROM events GROUP BY job_id)
      SQL
      assert_equal [1], sql("SELECT DISTINCT sum(json_extract(event, '$.type') = 'started') FROM events GROUP BY job_id").flatten
      assert_empty @client_store.queue_sizes
    end

    it "runs the jobs of a server killed with kill -9 on another server, within recovery_timeout" do
      ids = SQLiteJobs::SlowJob.enqueue_bulk([["a", 30], ["b", 30]])
      victim = start_sqlite("-c", "2", recovery_timeout: 2)
      wait_for(message: "both jobs to start") { recorded("start:a") == 1 && recorded("start:b") == 1 }
      live = start_sqlite("-c", "2", recovery_timeout: 2)

      killed_at = now
      victim.signal(:KILL)
      # The victim held both: either could have killed it, so both come back as suspects, and each runs alone.
      wait_for(timeout: 15, message: "a job to start on the live server") { recorded("start:a") == 2 || recorded("start:b") == 2 }
      elapsed = now - killed_at
      assert_operator elapsed, :<, 2 + 3, "recovery_timeout 2 s: the jobs should run again within about 2 s (took #{elapsed.round(1)} s)"
      first, second = (recorded("start:a") == 2) ? %w[a b] : %w[b a]
      assert_equal [victim.pid, live.pid], recorded_by("start:#{first}")

      jid = ids[(first == "a") ? 0 : 1]
      assert_equal %w[enqueued started requeued started], history_types(jid)
      held = @client_store.in_flight(server_id(live)).map { |job| JSON.parse(job.payload) }
      assert_equal [[jid, true, nil]], held.map { |job| job.values_at("jid", "suspect", "crashes") }, "a suspect runs alone, without a crash"
      waiting = @client_store.queue_entries("default").map { |payload| JSON.parse(payload) }
      assert_equal [[second, true, nil]], waiting.map { |job| [job["args"].first, *job.values_at("suspect", "crashes")] }
      assert_empty @client_store.in_flight(server_id(victim))
      wait_for(message: "the dead server to leave the registry") { @client_store.processes.keys == [server_id(live)] }
      assert_match(/reaper: process \S+ died; 2 of its jobs are back in their queues/, live.log)
    end

    it "sends a job that kills every process running it to the dead set after max_crashes, and keeps working" do
      jid = SQLiteJobs::KillJob.enqueue("poison")
      env = {"SQLITE_JOBS_MAX_CRASHES" => "2"}
      servers = []
      dead = wait_for(timeout: 40, message: "the poison job in the dead set") do
        servers.select!(&:running?)
        servers << start_sqlite("-c", "2", env: env, recovery_timeout: 1.5, wait: false) while servers.size < 2
        @client_store.set_entries("dead").first
      end
      job = JSON.parse(dead.first)
      assert_equal jid, job["jid"]
      assert_equal "Jiggler::Server::Reaper::PoisonJobError", job["error_class"]
      assert_match(/SQLiteJobs::KillJob was running in 2 processes that died/, job["error_message"])
      assert_equal 2, job["crashes"]
      assert_equal 2, recorded("kill:poison"), "it ran exactly max_crashes times"
      types = history_types(jid)
      assert_equal %w[enqueued started requeued started failed dead], types

      survivor = start_sqlite("-c", "2", env: env, recovery_timeout: 1.5)
      SQLiteJobs::RecordJob.enqueue_bulk([["after-1"], ["after-2"]])
      wait_for(message: "jobs after the poison job") { recorded("run:after-1") == 1 && recorded("run:after-2") == 1 }
      assert survivor.running?
      assert_equal 1, @client_store.counts[:dead]
      wait_for(message: "no job left in flight") { sql("SELECT count(*) FROM jobs WHERE state = 'in_flight'").flatten.first.zero? }
    end
  end

  describe "refusing a bad file" do
    def assert_refused(file, reason, env: {})
      before = File.exist?(file) ? File.binread(file) : nil
      status, output = run_cli("-r", fixture, env: {"JIGGLER_SQLITE_PATH" => file}.merge(env))
      assert_equal 1, status, output
      assert_equal 1, output.lines.size, "expected one line, got:\n#{output}"
      assert_match(/\Ajiggler: /, output)
      assert_includes output, file, "the message should name the file"
      assert_match reason, output
      if before
        assert_equal before, File.binread(file), "the file should be unchanged"
      else
        refute File.exist?(file), "no file should be created"
      end
    end

    it "exits 1 with one line for a file that is not a database" do
      File.write(@path, "name,email\nada,ada@example.com\n" * 50)
      assert_refused(@path, /not a jiggler database/)
    end

    it "exits 1 with one line for an SQLite database of another application" do
      db = SQLite3::Database.new(@path)
      db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
      db.close
      assert_refused(@path, /not a jiggler database/)
    end

    it "exits 1 with one line for a jiggler database from a newer version" do
      Jiggler::JobQueue.open(@path) { |queue| queue.create({"keep" => true}, "queued") }
      db = SQLite3::Database.new(@path)
      db.execute("PRAGMA user_version = #{Jiggler::JobQueue::Schema::VERSION + 1}")
      db.close
      assert_refused(@path, /newer jiggler/)
    end

    it "exits 1 with one line for a path that cannot be created" do
      blocker = File.join(@dir, "blocker")
      File.write(blocker, "a file where a directory should be\n")
      file = File.join(blocker, "db", "jobs.sqlite3")
      assert_refused(file, /cannot open jiggler database/)
      assert_equal "a file where a directory should be\n", File.read(blocker)
    end
  end

  describe "settings" do
    # A config without a Redis URL (the test process has REDIS_URL set), on this test's file.
    def sqlite_config(**values)
      Jiggler::Config.new.tap do |config|
        config[:redis_url] = nil
        config[:sqlite_path] = @path
        values.each { |key, value| config[key] = value }
      end
    end

    it "opens the file at sqlite_path in WAL mode, with synchronous NORMAL by default and FULL when configured" do
      store = Jiggler::Store.client(sqlite_config)
      assert_equal "SQLite #{@path}", store.description
      assert_equal [1, "wal"], store.with { |db| [db.get_first_value("PRAGMA synchronous"), db.get_first_value("PRAGMA journal_mode")] }
      store.close

      full = Jiggler::Store.client(sqlite_config(sqlite_synchronous: "full"))
      assert_equal 2, full.with { |db| db.get_first_value("PRAGMA synchronous") }
      full.close
      assert_raises(Jiggler::Config::InvalidError) { sqlite_config(sqlite_synchronous: "off") }
    end
  end
end

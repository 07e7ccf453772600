# frozen_string_literal: true

require "rbconfig"
require "jiggler/store/sqlite"
require "jiggler/job_queue"
require_relative "../reliability/helper"

# The real `jiggler` executable on the embedded SQLite store (no REDIS_URL in its environment), with this test process
# enqueueing through a Jiggler::Store::SQLite client on the same file: what only SQLite has. Each job's history, a
# file shared by several servers and enqueueing connections, an enqueue that survives its process's kill -9, and bad
# files that stop the CLI with one line. (Shutdown, kill -9 recovery and poison jobs run on both stores in
# test/jiggler/reliability/; SQLite's faults in test/jiggler/reliability/sqlite_faults_test.rb.)
describe "jiggler on SQLite" do
  include ReliabilityHelper

  def target_name = "sqlite"

  before { @children = [] }

  after do
    @children.each do |pid|
      Process.kill(:KILL, pid)
      Process.wait(pid)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end
  end

  def path = @target.path

  # Runs `exe/jiggler` with these arguments until it exits. @returns [Array(Integer, String)] status and output.
  def run_cli(*args, env: {}, timeout: 20)
    process = ServerProcess.new(
      *args,
      namespace: @namespace,
      env: @target.server_env.merge(env)
    ).start
    @servers << process
    status = process.wait(timeout: timeout)
    assert status,
      "jiggler #{args.join(" ")} did not exit within #{timeout} s:\n" \
      "#{process.log}"
    [status, process.log]
  end

  def processed = store.counts[:processed]

  def sql(query, *values) = store.with { |db| db.execute(query, values) }

  describe "one server" do
    it "runs jobs enqueued before and after it starts, " \
      "names the SQLite file at start, and records each job's history" do
      before_ids =
        Reliability::RecordJob.enqueue_bulk([["before-1"], ["before-2"]])
      server = start_reliable
      assert_match(
        /started: .*SQLite #{Regexp.escape(File.expand_path(path))}$/,
        server.log
      )
      refute_match(/redis/i, server.log)

      after_id = Reliability::RecordJob.enqueue("after")
      wait_for(message: "the three jobs to run") do
        %w[run:before-1 run:before-2 run:after].all? do |value|
          recorded_count(value) == 1
        end
      end
      wait_for(message: "the three jobs acknowledged") { processed == 3 }
      assert_equal [server.pid] * 3, records.map { |_, pid, _| pid }
      [*before_ids, after_id].each do |jid|
        assert_equal %w[enqueued started done], history_types(jid)
      end
      assert_empty store.queue_sizes
      assert_equal [server_id(server)], store.processes.keys
      summary = Jiggler.summary
      assert_equal [3, 0, 0, {}], summary.values_at(
        "processed_count",
        "failures_count",
        "dead_jobs_count",
        "queues"
      )
      assert_equal [server_id(server)], summary["processes"].keys
    end

    it "runs every job enqueued by a web process killed with kill -9 " \
      "right after it enqueued" do
      script = <<~RUBY
        require "jiggler"
        require "jiggler/store/sqlite"
        require "./test/fixtures/reliability_jobs"
        Jiggler.client = Jiggler::Client.new(Jiggler::Store::SQLite.new(path: ARGV[0]))
        jids = Array.new(20) { |n| Reliability::RecordJob.enqueue("web-\#{n}") }
        $stdout.puts jids.join(",")
        $stdout.flush
        Process.kill(:KILL, Process.pid)
      RUBY
      reader, writer = IO.pipe
      pid = Process.spawn(
        @target.server_env,
        RbConfig.ruby,
        "-I",
        File.expand_path("../../../lib", __dir__),
        "-e",
        script,
        path,
        out: writer,
        chdir: ServerProcess::ROOT
      )
      @children << pid
      writer.close
      assert IO.select([reader], nil, nil, 20),
        "the web process printed nothing"
      jids = reader.gets.to_s.chomp.split(",")
      wait_for(message: "the web process to die") do
        Process.wait2(pid, Process::WNOHANG)&.last
      end
      assert_equal 20, jids.size

      start_reliable
      wait_for(message: "every job of the killed web process to run") do
        Array.new(20) { |n| recorded_count("run:web-#{n}") }.all?(1)
      end
      wait_for(message: "every job acknowledged") do
        jids.all? { |jid| history_types(jid) == %w[enqueued started done] }
      end
    end

    it "records enqueued, started, failed, retried, started, done " \
      "for a job that failed once" do
      start_reliable(env: {"JIGGLER_TEST_POLL_INTERVAL" => "0.2"})
      jid = Reliability::FlakyJob.enqueue(
        "flaky",
        File.join(@dir, "flaky.marker")
      )
      wait_for(message: "the job in the retry set") do
        store.counts[:retry] == 1
      end
      assert_equal 1, recorded_count("fail:flaky")
      # Its retry is due in 15 to 24 s: make it due now.
      sql("UPDATE jobs SET run_at = ? WHERE state = 'retry'", Time.now.to_f - 1)
      wait_for(message: "the retry to run and be acknowledged") do
        history_types(jid).last == "done"
      end

      history = store.history(jid)
      assert_equal %w[enqueued started failed retried started done],
        history.map { |_, event| event["type"] }
      failed = history.find { |_, event| event["type"] == "failed" }.last
      assert_equal(
        {
          "type" => "failed",
          "attempt" => 1,
          "error_class" => "ArgumentError",
          "error_message" => "failed on purpose: flaky"
        },
        failed
      )
      times = history.map(&:first)
      assert_equal times.sort, times, "events oldest first"
      assert_equal 1, recorded_count("run:flaky")
      assert_equal 0, store.counts[:retry]
    end
  end

  describe "several servers on one file" do
    it "runs every job exactly once " \
      "while the test enqueues from two connections at once" do
      servers = Array.new(2) { start_reliable("-c", "5", wait: false) }
      servers.each { |server| wait_until_started(server) }
      options = Reliability::RecordJob.job_options
      enqueuers = Array.new(2) do |thread|
        Thread.new do
          store = Jiggler::Store::SQLite.new(path: path)
          client = Jiggler::Client.new(store)
          15.times do |batch|
            client.push(
              "Reliability::RecordJob",
              Array.new(20) { |n| ["#{thread}-#{batch}-#{n}"] },
              options
            )
            sleep 0.01 # enqueue while the servers work, as web processes would
          end
        ensure
          store&.close
        end
      end
      enqueuers.each do |thread|
        thread.join(30) or flunk("an enqueuer did not finish")
      end
      values = Array.new(2) do |thread|
        Array.new(15) do |batch|
          Array.new(20) { |n| "run:#{thread}-#{batch}-#{n}" }
        end
      end.flatten
      wait_for(timeout: 30, message: "600 jobs acknowledged") do
        processed == 600
      end

      counts = records.map(&:first).tally
      assert_equal values.sort, counts.keys.sort, "every job ran"
      assert_equal [1], counts.values.uniq,
        "no job ran twice: #{counts.select { |_, count| count > 1 }.first(5)}"
      assert_equal servers.map(&:pid).sort,
        records.map { |_, pid, _| pid }.uniq.sort,
        "both servers ran jobs"
      assert_equal [[600, 600, 600]], sql(<<~SQL)
        SELECT count(*), sum(started), sum(done) FROM (SELECT job_id,
          sum(json_extract(event, '$.type') = 'started') AS started, sum(json_extract(event, '$.type') = 'done') AS done
          FROM events GROUP BY job_id)
      SQL
      assert_equal [1], sql(
        "SELECT DISTINCT sum(json_extract(event, '$.type') = 'started') " \
        "FROM events GROUP BY job_id"
      ).flatten
      assert_empty store.queue_sizes
    end
  end

  describe "refusing a bad file" do
    def assert_refused(file, reason, env: {})
      before = File.exist?(file) ? File.binread(file) : nil
      status, output = run_cli(
        "-r",
        ReliabilityHelper::FIXTURE,
        env: {"JIGGLER_SQLITE_PATH" => file}.merge(env)
      )
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
      File.write(path, "name,email\nada,ada@example.com\n" * 50)
      assert_refused(path, /not a jiggler database/)
    end

    it "exits 1 with one line for an SQLite database of another application" do
      db = SQLite3::Database.new(path)
      db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
      db.close
      assert_refused(path, /not a jiggler database/)
    end

    it "exits 1 with one line for a jiggler database from a newer version" do
      Jiggler::Store::SQLite.new(path: path).tap(&:ping).close
      db = SQLite3::Database.new(path)
      db.execute(
        "PRAGMA user_version = #{Jiggler::Store::SQLite::SCHEMA.version + 1}"
      )
      db.close
      assert_refused(path, /newer jiggler/)
    end

    # JobQueue keeps files of its own: the store must neither take its jobs nor add its own tables to the file.
    it "exits 1 with one line for a Jiggler::JobQueue file" do
      Jiggler::JobQueue.open(path) do |queue|
        queue.create({"keep" => true}, "queued")
      end
      assert_refused(
        path,
        /is a Jiggler::JobQueue file, not the SQLite store's database/
      )
      Jiggler::JobQueue.open(path) do |queue|
        assert_equal(
          {"keep" => true},
          queue.poll({state: "queued"}, "taken").payload
        )
      end
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
        config[:sqlite_path] = path
        values.each { |key, value| config[key] = value }
      end
    end

    it "opens the file at sqlite_path in WAL mode, " \
      "with synchronous NORMAL by default and FULL when configured" do
      store = Jiggler::Store.client(sqlite_config)
      assert_equal "SQLite #{path}", store.description
      assert_equal [1, "wal"], store.with { |db|
        [
          db.get_first_value("PRAGMA synchronous"),
          db.get_first_value("PRAGMA journal_mode")
        ]
      }
      store.close

      full = Jiggler::Store.client(sqlite_config(sqlite_synchronous: "full"))
      assert_equal 2,
        full.with { |db| db.get_first_value("PRAGMA synchronous") }
      full.close
      assert_raises(Jiggler::Config::InvalidError) do
        sqlite_config(sqlite_synchronous: "off")
      end
    end
  end
end

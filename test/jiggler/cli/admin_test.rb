# frozen_string_literal: true

require "test_helper"
require "json"
require "tmpdir"
require "fileutils"
require "jiggler/store/sqlite"
require "support/raw_writes"

class AdminTestStep
  include Jiggler::Job

  def perform(_value) = nil
end

# The admin commands run as real `jiggler` processes against the suite's Redis and against an SQLite file: each reads or
# changes what the store holds, prints a table or JSON, and fails with one line and status 1.
module AdminCommandSpecs
  include RawWrites

  def self.included(base)
    base.class_eval do
      it "copes with a forged heartbeat in status and stop" do
        store.beat(
          "forged:1",
          '{"heartbeat":1e400,"started_at":true,"concurrency":[],' \
          '"hostname":"h","pid":1}',
          60
        )
        data = admin_json("status")
        assert_equal [["forged:1", nil, 0, 0]],
          data["processes"].map { |row|
            row.values_at("id", "heartbeat", "started_at", "concurrency")
          }
        assert_equal 0, admin("status").first
        assert_equal [
          0,
          "asked h:1 (forged:1) to stop; it acts at its next heartbeat\n"
        ], admin("stop", "h")
      end

      it "shows a queue name that is not UTF-8 in status and queues" do
        if store.is_a?(Jiggler::Store::Postgres)
          skip "PostgreSQL's text columns refuse bytes that are not UTF-8: " \
            "no queue can be named so"
        end
        plant_queue(store, "bad\xFFq".b, payload(queue: "bad"))
        assert_equal [["bad\uFFFDq", 1, true]],
          admin_json("status")["queues"].map { |queue|
            queue.values_at("name", "size", "paused")
          }
        assert_equal ["bad\uFFFDq"],
          admin_json("queues")["queues"].map { |queue| queue["name"] }
        status, output = admin("status")
        assert_equal 0, status, output
        assert_match(
          /^bad\uFFFDq\s+1\s/, output.dup.force_encoding(Encoding::UTF_8)
        )
      end

      it "tells where a job is (job) and how a workflow stands (workflow), " \
        "and names an unknown workflow" do
        queued = payload(queue: "reports")
        store.push("reports", [queued])
        jid = JSON.parse(queued)["jid"]
        assert_equal [
          0,
          "job #{jid}: queued\n  queue: reports\n" \
          "  class: RecordJob\n  position: 0\n"
        ], admin("job", jid)
        assert_equal(
          {"jid" => "nope", "state" => "unknown"}, admin_json("job", "nope")
        )

        flow = Jiggler::Workflow.new(client: Jiggler::Client.new(store))
        root = flow.step(AdminTestStep, 1)
        leaves = [
          flow.step(AdminTestStep, 2, after: root),
          flow.step(AdminTestStep, 3, after: root)
        ]
        flow.step(AdminTestStep, 4)
        flow.start
        store.step_died(flow.id, root)
        data = admin_json("workflow", flow.id)
        assert_equal(
          {"blocked" => 2, "dead" => 1, "released" => 1}, data["states"]
        )
        assert_equal [root], data["dead"]
        assert_equal leaves.sort, data["blocked"].sort
        status, output = admin("workflow", flow.id)
        assert_equal 0, status, output
        assert_equal "workflow #{flow.id}: blocked 2, dead 1, released 1",
          output.lines.first.chomp
        assert_equal "dead: #{root}", output.lines[1].chomp
        status, output = admin("workflow", "wf-none")
        assert_equal [1, 1], [status, output.lines.size]
        assert_match(/no workflow "wf-none"/, output)
      end

      it "shows the counters, queues and live processes in status, " \
        "as a table and as JSON" do
        server = start_store_server
        store.push(
          "reports", [payload(queue: "reports"), payload(queue: "reports")]
        )
        store.push("mail", [payload(queue: "mail")])
        store.pause_queue("mail")
        id = wait_for(message: "the server registered") do
          store.processes.keys.first
        end
        status, output = admin("status")
        assert_equal 0, status, output
        assert_match(/^QUEUE\s+SIZE\s+LATENCY\s+STATE$/, output)
        assert_match(/^mail\s+1\s+\d+\.\d s\s+paused$/, output)
        assert_includes output, id
        data = admin_json("status")
        assert_equal [3, 0, 0],
          data["counts"].values_at("enqueued", "retry", "dead")
        assert_equal [["mail", 1, true], ["reports", 2, false]],
          data["queues"].map { |queue|
            queue.values_at("name", "size", "paused")
          }
        assert_equal [[id, "#{Socket.gethostname}:#{server.pid}"]],
          data["processes"].map { |row| row.values_at("id", "host") }
      end

      it "probes for a live server working the given queues: " \
        "exit 1 without one, 0 with one, naming the store" do
        # the store exists (on SQLite, a missing file is refused before any probe)
        store.queue_sizes
        status, output = admin("status", "--probe")
        assert_equal [
          1,
          "failed: no live server at work; store: #{store_name}\n"
        ], [status, output]
        start_store_server
        wait_for(message: "the server registered") { store.processes.any? }
        assert_equal [
          0,
          "ok: 1 live server(s) at work; store: #{store_name}\n"
        ], admin("status", "--probe", "-q", "default")
        status, output = admin("status", "--probe", "-q", "default,mail")
        assert_equal [
          1,
          "failed: no live server works mail; store: #{store_name}\n"
        ], [status, output]
        status, output = admin("status", "--probe", "-q", "mail", "--json")
        assert_equal [1, false, ["mail"]],
          [status, *JSON.parse(output).values_at("ok", "missing")]
        assert_equal "store: #{store_name}",
          admin("status").last.lines.first.chomp
        assert_equal store_name, admin_json("queues")["store"]
      end

      it "pauses, resumes and clears queues" do
        store.push("mail", [payload(queue: "mail")])
        assert_equal [0, "paused queue mail\n"], admin("pause", "mail")
        assert_equal ["mail"], store.paused_queues
        assert_equal [
          {"name" => "mail", "size" => 1, "paused" => true, "waiting" => 0}
        ], admin_json("queues")["queues"].map { |queue|
          queue.except("latency")
        }
        assert_equal [0, "resumed queue mail\n"], admin("resume", "mail")
        assert_empty store.paused_queues
        assert_equal [0, "cleared queue mail\n"], admin("clear", "mail")
        assert_empty store.queue_sizes
      end

      it "retries, kills and deletes the jobs of a set, all or of one class" do
        failed("retry", 3, name: "HardJob")
        failed("retry", 2, name: "HardJobToo")
        assert_equal [0, "killed 3 jobs of class HardJob in the retries set\n"],
          admin("kill", "retries", "--class", "HardJob")
        assert_equal [2, 3], store.counts.values_at(:retry, :dead)
        assert_equal(
          {"set" => "dead", "class" => "HardJob", "count" => 3},
          admin_json("retry", "dead", "--class", "HardJob")
        )
        assert_equal [2, 0, 3], [
          store.counts[:retry],
          store.counts[:dead],
          store.queue_sizes["default"]
        ]
        assert_equal [0, "deleted 2 jobs in the retries set\n"],
          admin("delete", "retries")
        assert_equal 0, store.counts[:retry]
      end

      it "retries a class's jobs when more than a page " \
        "of other classes' jobs match its name" do
        failed("dead", 150, name: "ImportJobLater")
        failed("dead", 2, name: "ImportJob")
        assert_equal 2,
          admin_json("retry", "dead", "--class", "ImportJob")["count"]
        assert_equal [150, 2],
          [store.counts[:dead], store.queue_sizes["default"]]
      end

      it "quiets a process named by host and pid, " \
        "then stops one named by identity" do
        server = start_store_server
        id = wait_for(message: "the server registered") do
          store.processes.keys.first
        end
        status, output = admin("quiet", "#{Socket.gethostname}:#{server.pid}")
        assert_equal 0, status, output
        assert_includes output, "to quiet"
        wait_for(message: "the server quiet") do
          server.log.include?("quiet: no new jobs will be fetched")
        end
        wait_for(message: "the server reported quiet") do
          admin_json("status")["processes"].first["quiet"]
        end
        assert_match(
          /^\S+:#{server.pid}\s+0\/10\s+default\s+quiet\s/,
          admin("status").last
        )
        store.push("default", [payload])
        assert_equal 0, admin("stop", id).first
        assert_equal 0, server.wait(timeout: 20), server.log
        assert_equal(
          {"default" => 1}, store.queue_sizes, "a quiet server fetches nothing"
        )
      end

      it "refuses with one line and status 1 a pause, resume or clear " \
        "of what is not a queue name" do
        [
          ["pause", ""],
          ["resume", "a b"],
          ["clear", "a|b"],
          ["pause", "x" * 129]
        ].each do |args|
          status, output = admin(*args)
          assert_equal 1, status, "jiggler #{args.join(" ")}: #{output}"
          assert_match(
            /\Ajiggler: #{args.first} "[^"]*": not a queue name[^\n]+\n\z/,
            output
          )
        end
        assert_empty store.paused_queues
      end

      it "refuses with one line and status 1: an unknown set or process, " \
        "a missing argument, kill of dead" do
        [
          %w[retry nowhere],
          %w[quiet nobody],
          %w[pause],
          %w[kill dead],
          %w[status --bogus],
          %w[queues --probe]
        ].each do |args|
          status, output = admin(*args)
          assert_equal 1, status, "jiggler #{args.join(" ")}: #{output}"
          assert_match(/\Ajiggler: [^\n]+\n\z/, output)
        end
      end
    end
  end

  # A payload as the client writes it.
  def payload(queue: "default", name: "RecordJob")
    Jiggler::Payload.dump({
      "jid" => SecureRandom.hex(12),
      "name" => name,
      "args" => [1],
      "queue" => queue
    })
  end

  # Puts `count` jobs of a class in the retry or dead set.
  def failed(set, count, name:)
    records = Array.new(count) do |n|
      Jiggler::Store::Failed.new(
        fetched: Jiggler::Store::Fetched.new(n, "default", nil),
        set: set.to_sym,
        at: Time.now.to_f + 60,
        payload: payload(name: name)
      )
    end
    store.fail(
      "gone", records, reliable: false, dead_cutoff: 0.0, dead_max: 1_000
    )
  end

  # Runs `jiggler ARGS` on this test's store. @returns [Array(Integer, String)] its status and output.
  def admin(*args)
    process = ServerProcess.new(
      *args, *store_flags, namespace: @namespace, env: store_env
    ).start
    @servers << process
    status = process.wait(timeout: 20)
    assert status, "jiggler #{args.join(" ")} did not exit:\n#{process.log}"
    [status, process.log]
  end

  def admin_json(*args)
    status, output = admin(*args, "--json")
    assert_equal 0, status, output
    JSON.parse(output)
  end

  def start_store_server
    server = ServerProcess.new(
      *store_flags, namespace: @namespace, env: store_env
    ).start
    @servers << server
    wait_for(message: "server start") do
      server.log.include?("started:") || !server.running?
    end
    server
  end
end

describe "jiggler admin commands on Redis" do
  include AdminCommandSpecs

  def store_flags = ["-r", "./test/fixtures/jobs.rb"]

  def store_env = {}

  def store_name
    "Redis #{RedisServer.instance.url.delete_suffix("/0")} " \
      "namespace #{@namespace.inspect}"
  end

  it "fails with one line when Redis cannot be reached" do
    process = ServerProcess.new(
      "status",
      namespace: @namespace,
      env: {"REDIS_URL" => "redis://127.0.0.1:#{free_port}/0"}
    ).start
    @servers << process
    assert_equal 1, process.wait(timeout: 20)
    assert_match(/\Ajiggler: .*unreachable[^\n]*\n\z/, process.log)
  end
end

describe "jiggler admin commands on SQLite" do
  include AdminCommandSpecs

  before do
    @dir = Dir.mktmpdir("jiggler-admin")
    @path = File.join(@dir, "jobs.sqlite3")
    @sqlite = Jiggler::Store::SQLite.new(path: @path)
  end

  after do
    @sqlite.close
    FileUtils.rm_rf(@dir)
  end

  def store = @sqlite

  # loads jiggler only: nothing here needs Redis
  def store_flags = ["-r", "./test/fixtures/metrics_jobs.rb"]

  def store_env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path}

  def store_name = "SQLite #{@path}"

  it "refuses with one line, creating nothing, " \
    "when no store file exists at the path" do
    missing = File.join(@dir, "none.sqlite3")
    %w[status queues].each do |command|
      process = ServerProcess.new(
        command,
        namespace: @namespace,
        env: {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => missing}
      ).start
      @servers << process
      assert_equal 1, process.wait(timeout: 20), process.log
      assert_equal "jiggler: no store file exists at #{missing} " \
        "(sqlite_path or JIGGLER_SQLITE_PATH); " \
        "point it at the file your servers use, or set REDIS_URL\n",
        process.log
    end
    refute File.exist?(missing), "the command created the file"
  end
end

describe "jiggler admin commands on PostgreSQL" do
  include AdminCommandSpecs

  before do
    require "support/postgres_server"
    @postgres = Jiggler::Store::Postgres.new(
      url: PostgresServer.instance.url, namespace: @namespace
    )
  end

  after do
    @postgres.close
    PostgresServer.instance.drop_schema(@namespace)
  end

  def store = @postgres

  # loads jiggler only: nothing here needs Redis
  def store_flags = ["-r", "./test/fixtures/metrics_jobs.rb"]

  def store_env
    {"REDIS_URL" => nil, "JIGGLER_DATABASE_URL" => PostgresServer.instance.url}
  end

  def store_name = @postgres.description
end

# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "jiggler/store/sqlite"
require "support/store_contract"

describe Jiggler::Store::SQLite do
  include StoreContract

  def build_store
    @dir ||= Dir.mktmpdir("jiggler-sqlite")
    Jiggler::Store::SQLite.new(path: File.join(@dir, "jobs.sqlite3"))
  end
end

# README, The embedded SQLite store: "finished jobs and their history are kept for done_retention seconds". The setting
# reaches the store the config builds, and the scheduler's check (enqueue_due) deletes a finished job once it is older.
describe "done_retention on the SQLite store" do
  it "keeps a finished job's history for done_retention seconds, " \
    "then deletes it" do
    dir = Dir.mktmpdir("jiggler-sqlite-retention")
    Jiggler.configure do |config|
      config[:redis_url] = nil
      config[:sqlite_path] = File.join(dir, "jobs.sqlite3")
      config[:done_retention] = 100
    end
    jid = RecordJob.enqueue(1)
    fetched = store.fetch("retention-test", ["default"], limit: 1)
    store.fetch(
      "retention-test",
      ["default"],
      limit: 0,
      acks: fetched.map(&:handle)
    )
    finished = Time.now.to_f
    check = ->(at) {
      store.enqueue_due(at) do |from, payload|
        Jiggler::JobRules.due(from, payload, at)
      end
    }
    check.call(finished + 90)
    refute_empty store.history(jid),
      "deleted 90 s after it finished, within done_retention"
    check.call(finished + 110)
    assert_empty store.history(jid),
      "kept 110 s after it finished, past done_retention"
  ensure
    store.close
    FileUtils.rm_rf(dir)
  end
end

# An in-memory database is private to its connection: jobs written there would never reach a server.
describe "Jiggler::Store::SQLite on an in-memory path" do
  def in_memory
    [
      ":memory:",
      "file:jobs?mode=memory&cache=shared",
      "file::memory:?cache=shared",
      "file:jobs?vfs=memdb"
    ]
  end

  it "refuses to open one at first use, naming the setting" do
    Dir.mktmpdir("jiggler-memory") do |dir|
      Dir.chdir(dir) do
        in_memory.each do |path|
          error = assert_raises(Jiggler::Store::ConnectionError, path) do
            Jiggler::Store::SQLite.new(path: path).ping
          end
          assert_match(
            /\Asqlite_path \(JIGGLER_SQLITE_PATH\) .* is an in-memory database/,
            error.message
          )
        end
        assert_empty Dir.children(dir)
      end
    end
  end

  it "refuses an enqueue when JIGGLER_SQLITE_PATH names one, writing no jid" do
    saved = ENV.values_at("REDIS_URL", "JIGGLER_SQLITE_PATH")
    in_memory.each do |path|
      ENV["REDIS_URL"] = nil
      ENV["JIGGLER_SQLITE_PATH"] = path
      Jiggler.reset!
      error = assert_raises(Jiggler::Config::InvalidError, path) do
        RecordJob.enqueue(1)
      end
      assert_match(
        /\AJIGGLER_SQLITE_PATH must be a non-empty String naming a file/,
        error.message
      )
    end
  ensure
    ENV["REDIS_URL"], ENV["JIGGLER_SQLITE_PATH"] = saved
  end
end

# Until Jiggler::JobQueue took files of its own, it kept its jobs in the store's `jobs` table, as rows with no queue.
# A store file of then (schema 3) upgrades with its jobs and their history; JobQueue's rows move to tables of their
# own, kept as they were, out of the store's sight.
describe "Jiggler::Store::SQLite on a file of schema 3" do
  before do
    @dir = Dir.mktmpdir("jiggler-sqlite-schema-3")
    @path = File.join(@dir, "jobs.sqlite3")
    db = SQLite3::Database.new(@path)
    schema = Jiggler::Store::SQLite::SCHEMA
    (1..3).each { |step| db.execute_batch(schema.migrations.fetch(step)) }
    db.execute("PRAGMA application_id = #{schema.application_id}")
    db.execute("PRAGMA user_version = 3")
    db.execute(
      "INSERT INTO jobs (id, state, payload) " \
      "VALUES (1, 'queued', '{\"n\":1}')"
    )
    db.execute(
      "INSERT INTO jobs (id, state, queue, run_at, payload) " \
      "VALUES (2, 'queued', 'default', 100.5, " \
      "'{\"jid\":\"a\",\"class\":\"HardJob\",\"args\":[]}')"
    )
    db.execute(
      "INSERT INTO events (job_id, at, event) " \
      "VALUES (1, 90.0, '\"mine\"'), (2, 100.5, '{\"type\":\"enqueued\"}')"
    )
    db.close
    @store = Jiggler::Store::SQLite.new(path: @path)
  end

  after do
    @store.close
    FileUtils.rm_rf(@dir)
  end

  it "upgrades it, keeping its job and history" do
    @store.ping
    version = SQLite3::Database.new(@path).then do |db|
      db.get_first_value("PRAGMA user_version").tap { db.close }
    end
    assert_equal Jiggler::Store::SQLite::SCHEMA.version, version
    assert_equal [{"type" => "enqueued"}], @store.history("a").map(&:last)
    assert_equal({"default" => 1}, @store.queue_sizes)
    fetched = @store.fetch("schema-3", ["default"], limit: 10)
    assert_equal ["a"], fetched.map { |job| JSON.parse(job.payload)["jid"] },
      "only the store's job is fetched"
  end

  it "moves JobQueue's row and its event to tables of their own, " \
    "as they were" do
    @store.ping
    db = SQLite3::Database.new(@path)
    assert_equal [[1, "queued", '{"n":1}']],
      db.execute("SELECT id, state, payload FROM job_queue_jobs")
    assert_equal [[1, 90.0, '"mine"']],
      db.execute("SELECT job_id, at, event FROM job_queue_events")
    assert_equal [[2]], db.execute("SELECT id FROM jobs"),
      "the store's job alone"
    assert_equal [[2]], db.execute("SELECT job_id FROM events")
  ensure
    db&.close
  end
end

describe "Jiggler::Store::SQLite's new file" do
  it "has only the store's tables: no column or table of Jiggler::JobQueue's" do
    Dir.mktmpdir("jiggler-sqlite-new") do |dir|
      store = Jiggler::Store::SQLite.new(path: File.join(dir, "jobs.sqlite3"))
      columns = store.with do |db|
        db.execute("SELECT name FROM pragma_table_info('jobs')").flatten
      end
      tables = store.with do |db|
        db.execute(
          "SELECT name FROM sqlite_master WHERE type = 'table'"
        ).flatten
      end
      refute_includes columns, "modified"
      assert_empty tables.grep(/job_queue/)
      assert_includes tables, "jobs"
    ensure
      store&.close
    end
  end
end

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
  it "keeps a finished job's history for done_retention seconds, then deletes it" do
    dir = Dir.mktmpdir("jiggler-sqlite-retention")
    Jiggler.configure do |config|
      config[:redis_url] = nil
      config[:sqlite_path] = File.join(dir, "jobs.sqlite3")
      config[:done_retention] = 100
    end
    jid = RecordJob.enqueue(1)
    fetched = store.fetch("retention-test", ["default"], limit: 1)
    store.fetch("retention-test", ["default"], limit: 0, acks: fetched.map(&:handle))
    finished = Time.now.to_f
    check = ->(at) { store.enqueue_due(at) { |from, payload| Jiggler::JobRules.due(from, payload, at) } }
    check.call(finished + 90)
    refute_empty store.history(jid), "deleted 90 s after it finished, within done_retention"
    check.call(finished + 110)
    assert_empty store.history(jid), "kept 110 s after it finished, past done_retention"
  ensure
    store.close
    FileUtils.rm_rf(dir)
  end
end

# An in-memory database is private to its connection: jobs written there would never reach a server.
describe "Jiggler::Store::SQLite on an in-memory path" do
  def in_memory = [":memory:", "file:jobs?mode=memory&cache=shared", "file::memory:?cache=shared", "file:jobs?vfs=memdb"]

  it "refuses to open one at first use, naming the setting" do
    Dir.mktmpdir("jiggler-memory") do |dir|
      Dir.chdir(dir) do
        in_memory.each do |path|
          error = assert_raises(Jiggler::Store::ConnectionError, path) { Jiggler::Store::SQLite.new(path: path).ping }
          assert_match(/\Asqlite_path \(JIGGLER_SQLITE_PATH\) .* is an in-memory database/, error.message)
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
      error = assert_raises(Jiggler::Config::InvalidError, path) { RecordJob.enqueue(1) }
      assert_match(/\AJIGGLER_SQLITE_PATH must be a non-empty String naming a file/, error.message)
    end
  ensure
    ENV["REDIS_URL"], ENV["JIGGLER_SQLITE_PATH"] = saved
  end
end

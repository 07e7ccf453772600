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

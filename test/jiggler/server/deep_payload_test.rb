# frozen_string_literal: true

require_relative "../reliability/helper"
require "tmpdir"
require "fileutils"
require "jiggler/store/sqlite"
require_relative "../../fixtures/sqlite_jobs"

# A payload nested far deeper than Jiggler::Payload::NESTING_LIMIT, written to a queue by another producer (the Ruby
# client refuses to build it): real `jiggler` processes on Redis and on SQLite send it to the dead set as unreadable,
# with its raw text, and go on with every other job; a process restarted after a kill -9 that left it in flight
# survives its reaper too.
module DeepPayloadCases
  DEPTH = 3_500

  def poison(name)
    %({"jid":"#{SecureRandom.hex(12)}","name":"#{name}","args":[#{"[" * DEPTH}1#{"]" * DEPTH}],"queue":"default"})
  end

  def assert_dead_as_unreadable(payload)
    wait_for(message: "the deep payload in the dead set") { dead_jobs.size == 1 }
    job = dead_jobs.first
    assert_equal "Jiggler::Payload::MalformedError", job["error_class"]
    assert_match(/nests deeper than 100 levels/, job["error_message"])
    assert_equal payload, job["raw"], "the raw text is kept"
  end

  def dead_jobs = store.set_entries(:dead, limit: 10).map { |json, _| JSON.parse(json) }

  # The deep job goes in flight for a live server that works another queue (as if it had fetched the job); the test
  # then kills that server with kill -9, and a new server's reaper finds the job and must survive it.
  def put_in_flight_of(server, payload)
    id = server.log[/ started: (\S+),/, 1]
    store.push("default", [payload])
    fetched = store.fetch(id, ["default"], limit: 1, token: 10**9)
    assert_equal payload, fetched.last, "the deep job is in flight for #{id}"
  end
end

describe "a deeply nested payload on Redis" do
  include ReliabilityHelper
  include DeepPayloadCases

  def ran(count) = (1..count).all? { |value| recorded_count("run:#{value}") == 1 }

  it "goes to the dead set while the server runs every other job" do
    server = start_reliable("-c", "2")
    payload = poison("Reliability::RecordJob")
    store.push("default", [payload])
    Reliability::RecordJob.enqueue_bulk((1..30).zip)
    wait_for(message: "30 ordinary jobs") { ran(30) }
    assert_dead_as_unreadable(payload)
    assert server.running?, server.log
    assert_match(/dead: unreadable job in queue default: payload nests deeper/, server.log)
  end

  it "is sent to the dead set by the reaper of the next server after a kill -9" do
    first = start_reliable("-c", "1", "-q", "other", recovery_timeout: 1)
    payload = poison("Reliability::RecordJob")
    put_in_flight_of(first, payload)
    first.signal("KILL")
    first.wait
    second = start_reliable("-c", "2", recovery_timeout: 1)
    Reliability::RecordJob.enqueue_bulk((1..30).zip)
    assert_dead_as_unreadable(payload)
    wait_for(message: "30 ordinary jobs") { ran(30) }
    assert second.running?, second.log
  end
end

describe "a deeply nested payload on SQLite" do
  include DeepPayloadCases

  before do
    @dir = Dir.mktmpdir("jiggler-deep")
    @path = File.join(@dir, "jobs.sqlite3")
    @record = File.join(@dir, "record.txt")
    @sqlite = Jiggler::Store::SQLite.new(path: @path)
    Jiggler.client = Jiggler::Client.new(@sqlite)
  end

  after do
    @servers.each { |server| warn("--- server log:\n#{server.log}") } unless passed?
    @servers.each(&:kill)
    @sqlite.close
    FileUtils.rm_rf(@dir)
  end

  def store = @sqlite

  def start_sqlite(*flags)
    env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path, "SQLITE_JOBS_RECORD_FILE" => @record,
           "SQLITE_JOBS_RECOVERY_TIMEOUT" => "1"}
    server = ServerProcess.new("-r", "./test/fixtures/sqlite_jobs.rb", *flags, namespace: @namespace, env: env).start
    @servers << server
    wait_for(timeout: 20, message: "server start") { server.log.include?("started:") || !server.running? }
    assert server.running?, server.log
    server
  end

  def ran(count)
    lines = File.exist?(@record) ? File.readlines(@record).map { |line| line.split.first } : []
    (1..count).all? { |value| lines.count("run:#{value}") == 1 }
  end

  it "goes to the dead set while the server runs every other job" do
    server = start_sqlite("-c", "2")
    payload = poison("SQLiteJobs::RecordJob")
    store.push("default", [payload])
    SQLiteJobs::RecordJob.enqueue_bulk((1..30).zip)
    wait_for(timeout: 20, message: "30 ordinary jobs") { ran(30) }
    assert_dead_as_unreadable(payload)
    assert server.running?, server.log
  end

  it "is sent to the dead set by the reaper of the next server after a kill -9" do
    first = start_sqlite("-c", "1", "-q", "other")
    payload = poison("SQLiteJobs::RecordJob")
    put_in_flight_of(first, payload)
    first.signal("KILL")
    first.wait
    second = start_sqlite("-c", "2")
    SQLiteJobs::RecordJob.enqueue_bulk((1..30).zip)
    assert_dead_as_unreadable(payload)
    wait_for(timeout: 20, message: "30 ordinary jobs") { ran(30) }
    assert second.running?, second.log
  end
end

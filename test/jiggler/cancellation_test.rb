# frozen_string_literal: true

require "test_helper"
require "delegate"
require "fileutils"
require "tmpdir"
require "jiggler/cancellation"
require "jiggler/server/failure"
require "jiggler/store/sqlite"

# The store methods a cancel calls, in order.
class CancellationCalls < SimpleDelegator
  attr_reader :calls

  def initialize(store)
    super
    @calls = []
  end

  %i[
    request_cancel
    cancel_waiting
    set_entries
    queue_sizes
    queue_entries
    kill_set_entries
    delete_queue_entry
    fail
    unlock
  ].each do |name|
    define_method(name) do |*args, **options, &block|
      @calls << name
      __getobj__.public_send(name, *args, **options, &block)
    end
  end
end

# Jiggler::Cancellation on a real store: the request first, then one store step for a waiting job, so no failure
# between two writes can lose the job or leave it waiting after it was reported cancelled.
describe Jiggler::Cancellation do
  before do
    @dir = Dir.mktmpdir("jiggler-cancellation")
    @store = Jiggler::Store::SQLite.new(path: File.join(@dir, "jobs.sqlite3"))
  end

  after do
    @store.close
    FileUtils.rm_rf(@dir)
  end

  def config = Jiggler::Config.new

  def payload(jid)
    Jiggler::Payload.dump(
      {"jid" => jid, "name" => "RecordJob", "args" => [1], "queue" => "default"}
    )
  end

  def dead_jids
    @store.set_entries(:dead).map do |entry, _|
      Jiggler::Payload.load(entry)["jid"]
    end
  end

  it "records the request, then moves a waiting job in one store call, " \
    "marked as a running job is" do
    @store.push("default", [payload("a" * 24)])
    log = CancellationCalls.new(@store)
    assert_equal :removed,
      Jiggler::Cancellation.cancel(
        log, "a" * 24, by: "ops", config: config, now: 1_000.5
      )
    assert_equal %i[request_cancel cancel_waiting], log.calls
    dead = Jiggler::Payload.load(@store.set_entries(:dead).first.first)
    fetched = Jiggler::Store::Fetched.new(nil, "default", payload("a" * 24))
    running = Jiggler::Server::Failure.cancel(
      fetched, Jiggler::Payload.load(payload("a" * 24)), "ops", 1_000.5
    )
    assert_equal Jiggler::Payload.load(running.payload), dead
    assert_equal [["a" * 24, "ops"]],
      @store.cancel_requests(1_000.5).map { |request|
        [request.jid, request.by]
      }
    assert_equal(
      {"type" => "cancelled", "by" => "ops"},
      @store.history("a" * 24).last.last,
      "its history says so, as a running job's"
    )
  end

  it "leaves the job waiting when the move fails part way: " \
    "nothing of it is written" do
    @store.push("default", [payload("b" * 24)])
    @store.define_singleton_method(:trim_dead) do |*|
      raise IOError, "the process died here"
    end
    assert_raises(IOError) do
      Jiggler::Cancellation.cancel(@store, "b" * 24, by: "ops", config: config)
    end
    assert_equal [["b" * 24], []],
      [
        @store.queue_entries("default").map { |entry|
          Jiggler::Payload.load(entry)["jid"]
        },
        dead_jids
      ]
  end

  it "frees the concurrency slot reserved for a queued job it cancels, " \
    "as for a running one" do
    limited = ->(jid) {
      Jiggler::Payload.dump(
        {
          "jid" => jid,
          "name" => "RecordJob",
          "args" => [],
          "queue" => "default",
          "limits" => {
            "concurrency" => {"key" => "K", "limit" => 1, "ttl" => 600}
          }
        }
      )
    }
    acquire = ->(fetched) {
      @store.acquire_slot(
        "p",
        fetched,
        key: "K",
        limit: 1,
        jid: Jiggler::Payload.load(fetched.payload)["jid"],
        ttl: 600,
        reliable: true
      )
    }
    @store.push("default", [limited.call("d" * 24), limited.call("e" * 24)])
    first, second = @store.fetch("p", ["default"], limit: 2)
    assert_equal [true, false], [acquire.call(first), acquire.call(second)]
    # e leaves the waiting list, its slot reserved
    @store.release_slot("K", "d" * 24, limit: 1, ttl: 600)
    assert_equal :removed,
      Jiggler::Cancellation.cancel(@store, "e" * 24, by: "ops", config: config)
    @store.push("default", [limited.call("f" * 24)])
    assert acquire.call(@store.fetch("p", ["default"], limit: 1).first),
      "the slot e held is free"
  end

  it "only requests the cancel of a job that does not wait" do
    log = CancellationCalls.new(@store)
    assert_equal :requested,
      Jiggler::Cancellation.cancel(log, "c" * 24, by: "ops", config: config)
    assert_equal %i[request_cancel cancel_waiting], log.calls
    assert_empty dead_jids
  end
end

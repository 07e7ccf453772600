# frozen_string_literal: true

require "test_helper"
require "delegate"
require "jiggler/store/sqlite"
require "jiggler/set_actions"

# A store as a running server changes it: every job the sweep moves to its queue is fetched, fails and goes back to
# the dead set at once, under a new score.
class SweepDyingAgainStore < SimpleDelegator
  attr_reader :moves

  def enqueue_set_entries(set, entries, now: Time.now.to_f, &block)
    moved = super
    @moves = (@moves || 0) + moved
    payloads = __getobj__.queue_entries("default", limit: 1_000)
    __getobj__.clear_queue("default")
    records = payloads.map.with_index do |payload, n|
      dead_record(payload, n, now)
    end
    if records.any?
      __getobj__.fail(
        "gone", records, reliable: false, dead_cutoff: 0.0, dead_max: 1_000_000
      )
    end
    moved
  end

  def dead_record(payload, n, now)
    fetched = Jiggler::Store::Fetched.new(n, "default", nil)
    Jiggler::Store::Failed.new(
      fetched: fetched, set: :dead, at: now + 1 + n, payload: payload
    )
  end
end

# The sweeps of `jiggler retry|kill|delete SET [--class NAME]` and of the dashboard's "all" buttons
# (SetActions.sweep): each acts once on the jobs the set held when it began, of exactly the class named, and costs
# time in proportion to the set's size.
describe "Jiggler::SetActions.sweep" do
  def payload(name, jid: SecureRandom.hex(12))
    Jiggler::Payload.dump({
      "jid" => jid,
      "name" => name,
      "args" => [1],
      "queue" => "default"
    })
  end

  # Puts jobs in the dead set, each named by its class (and jid), scored one second apart.
  def dead(*jobs, at: Time.now.to_f - 3600)
    records = jobs.each_with_index.map do |(name, jid), n|
      fetched = Jiggler::Store::Fetched.new(n, "default", nil)
      Jiggler::Store::Failed.new(
        fetched: fetched,
        set: :dead,
        at: at + n,
        payload: payload(name, jid: jid || SecureRandom.hex(12))
      )
    end
    records.each_slice(1_000) do |slice|
      store.fail(
        "gone", slice, reliable: false, dead_cutoff: 0.0, dead_max: 1_000_000
      )
    end
  end

  it "retries the jobs of exactly the class named: " \
    "not those whose class or jid contains the name" do
    dead(
      ["HardJob"],
      ["HardJobToo"],
      ["AHardJob"],
      ["OtherJob", "HardJob-in-the-jid"],
      ["HardJob"]
    )
    assert_equal 2,
      Jiggler::SetActions.sweep(store, :dead, :run, name: "HardJob")
    assert_equal [2, 3], [store.queue_sizes["default"], store.counts[:dead]]
    names = store.set_entries(:dead).map do |entry, _|
      Jiggler::Payload.load(entry)["name"]
    end
    assert_equal %w[HardJobToo AHardJob OtherJob], names
  end

  it "acts once on each job the set held when it began, " \
    "though the jobs die again meanwhile" do
    dead(["HardJob"], ["HardJob"], ["HardJob"])
    dying = SweepDyingAgainStore.new(store)
    assert_equal 3,
      Jiggler::SetActions.sweep(dying, :dead, :run, name: "HardJob")
    assert_equal 3, dying.moves
    assert_equal 3, store.counts[:dead], "the jobs died again once each"
  end

  it "acts once on SQLite too" do
    Dir.mktmpdir("jiggler-sweep") do |dir|
      sqlite = Jiggler::Store::SQLite.new(path: File.join(dir, "jobs.sqlite3"))
      @store = sqlite
      dead(*Array.new(1_203) { ["HardJob"] }, ["OtherJob"])
      dying = SweepDyingAgainStore.new(sqlite)
      assert_equal 1_203,
        Jiggler::SetActions.sweep(dying, :dead, :run, name: "HardJob")
      assert_equal 1_203, dying.moves
      assert_equal 1_204, sqlite.counts[:dead]
    ensure
      sqlite&.close
    end
  end

  it "sweeps 50,000 jobs by class on Redis " \
    "through `jiggler retry dead --class` in a few seconds" do
    dead(*Array.new(50_000) { |n| [n.even? ? "HardJob" : "HardJobLater"] })
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    process = ServerProcess.new(
      "retry", "dead", "--class", "HardJob", "-r", "./test/fixtures/jobs.rb",
      namespace: @namespace
    ).start
    @servers << process
    assert_equal 0, process.wait(timeout: 120), process.log
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    puts format(
      "\n  jiggler retry dead --class HardJob on 50,000 dead jobs " \
      "(25,000 of the class): %.2f s",
      seconds
    )
    assert_equal "retried 25000 jobs of class HardJob in the dead set\n",
      process.log
    assert_equal [25_000, 25_000],
      [store.queue_sizes["default"], store.counts[:dead]]
    assert_operator seconds, :<, 20
  end

  def store = @store || super
end

# frozen_string_literal: true

require "test_helper"
require "json"
require "support/loop_test"
require "jiggler/server/reaper"

# The reaper finds processes whose registration expired and puts the jobs they held back in their queues: the one job
# of a process that held one gets a crash counted, the jobs of a process that held several come back as suspects; a
# job at max_crashes, or one it cannot read, goes to the dead set. It never reaps its own process or a live one, moves
# each job once however many reapers race, and after losing touch with the store waits a registration's life before
# it trusts expiries again. On each store, without a server.
module ReaperTest
  SELF = "reaper-test:self"
  GONE = "reaper-test:gone"
  LIVE = "reaper-test:live"
end

StoreTarget.describe_each("Jiggler::Server::Reaper") do
  include LoopTest

  before do
    # Checks every 0.05 s; registrations live 0.17 s; its grace after an outage is 0.22 s.
    Jiggler.configure { |config| config[:recovery_timeout] = 0.25 }
  end

  def reaper(store = build_store)
    Jiggler::Server::Reaper.new(
      store: store,
      process: ReaperTest::SELF,
      config: Jiggler.config,
      logger: logger
    )
  end

  def job(value, **fields)
    Jiggler::Payload.dump({
      "jid" => SecureRandom.hex(12),
      "name" => "RecordJob",
      "args" => [value],
      "queue" => "default"
    }.merge(fields.transform_keys(&:to_s)))
  end

  # Jobs `process` took from the default queue, as its fetcher would, before it died (its registration expired).
  def died_holding(process, payloads)
    Jiggler.store.push("default", payloads)
    Jiggler.store.fetch(process, ["default"], limit: payloads.size)
    Jiggler.store.beat(process, "{}", 0.001)
    wait_for(message: "#{process}'s registration to expire") do
      Jiggler.store.dead_processes.include?(process)
    end
  end

  def queued
    Jiggler.store.queue_entries("default").map { |payload| JSON.parse(payload) }
  end

  def dead
    Jiggler.store.set_entries(:dead).map { |payload, _| JSON.parse(payload) }
  end

  it "puts the jobs of a process that died holding several back, " \
    "with no crash counted, and forgets it" do
    died_holding(ReaperTest::GONE, [job("a"), job("b", crashes: 1)])
    assert_equal 2, reaper.reap
    # "b" would be poisoned by its next death (max_crashes 3): it runs alone,
    # so that death is its own.
    assert_equal [["a", nil, nil, 1], ["b", 1, true, 1]], queued.map { |job|
      [job["args"].first, job["crashes"], job["suspect"], job["deaths_beside"]]
    }
    assert_equal 0, Jiggler.store.in_flight_count(ReaperTest::GONE)
    assert_empty Jiggler.store.dead_processes, "forgotten"
    assert_equal [
      "WARN: reaper: process #{ReaperTest::GONE} died; " \
      "2 of its jobs are back in their queues\n"
    ], logged(/reaper/)
  end

  it "counts a crash on the one job of a process that died holding one" do
    died_holding(ReaperTest::GONE, [job("alone")])
    assert_equal 1, reaper.reap
    assert_equal [["alone", 1, nil]],
      queued.map { |job| [job["args"].first, job["crashes"], job["suspect"]] }
  end

  it "sends a job at max_crashes to the dead set as a poison job, " \
    "and one it cannot read as malformed" do
    told = []
    Jiggler.configure do |config|
      config[:death_handlers] << ->(job, error) do
        told << [job["name"], error.class.name]
      end
    end
    died_holding(ReaperTest::GONE, [job("poison", crashes: 2)])
    assert_equal 1, reaper.reap
    died_holding(ReaperTest::GONE, ["{unreadable", job("fine")])
    assert_equal 2, reaper.reap
    assert_equal ["fine"], queued.map { |job| job["args"].first }
    by_class = dead.to_h { |job| [job["error_class"], job] }
    assert_equal %w[
      Jiggler::Payload::MalformedError
      Jiggler::Server::Reaper::PoisonJobError
    ], by_class.keys.sort
    assert_match(
      /RecordJob was running in 3 processes that died/,
      by_class["Jiggler::Server::Reaper::PoisonJobError"]["error_message"]
    )
    assert_equal "{unreadable",
      by_class["Jiggler::Payload::MalformedError"]["raw"]
    assert_equal(
      [
        ["RecordJob", "Jiggler::Server::Reaper::PoisonJobError"],
        ["(unreadable)", "Jiggler::Payload::MalformedError"]
      ],
      told,
      "death handlers hear of the jobs the reaper sends to the dead set"
    )
    assert_equal [
      "WARN: reaper: process #{ReaperTest::GONE} died; " \
      "0 of its jobs are back in their queues, 1 went to the dead set\n",
      "WARN: reaper: process #{ReaperTest::GONE} died; " \
      "1 of its jobs are back in their queues, 1 went to the dead set\n"
    ], logged(/reaper/)
  end

  it "never reaps its own process, nor a live one" do
    died_holding(ReaperTest::SELF, [job("mine")])
    Jiggler.store.push("default", [job("live")])
    Jiggler.store.fetch(ReaperTest::LIVE, ["default"], limit: 1)
    Jiggler.store.beat(ReaperTest::LIVE, "{}", 60)
    assert_equal 0, reaper.reap
    assert_equal [1, 1],
      [
        Jiggler.store.in_flight_count(ReaperTest::SELF),
        Jiggler.store.in_flight_count(ReaperTest::LIVE)
      ]
    assert_empty logged(/reaper/)
  end

  it "moves each job once when the reapers of several processes race for it" do
    died_holding(ReaperTest::GONE, Array.new(20) { |n| job(n) })
    reapers = Array.new(3) { reaper }
    moved = reapers.map { |one| Thread.new { one.reap } }.sum(&:value)
    assert_equal 20, moved
    assert_equal (0...20).to_a, queued.map { |job| job["args"].first }.sort
  end

  it "recovers a process's jobs at once when asked (as a supervisor does), " \
    "by the same rules, and a later reap moves none" do
    told = []
    Jiggler.configure do |config|
      config[:death_handlers] << ->(job, error) { told << job["args"].first }
    end
    Jiggler.store.push("default", [job("alone"), job("poison", crashes: 2)])
    Jiggler.store.fetch(ReaperTest::GONE, ["default"], limit: 1)
    # still registered: its supervisor saw it die
    Jiggler.store.beat(ReaperTest::GONE, "{}", 60)
    assert_equal 1, reaper.recover(ReaperTest::GONE)
    assert_equal [["alone", 1], ["poison", 2]],
      queued.map { |job| [job["args"].first, job["crashes"]] }
    # Through stores with no past fetches, as new processes fetch (PostgreSQL's claims start after the last row their
    # store took, and reach back for requeued jobs on a rescan).
    # "alone" again
    build_store.fetch(ReaperTest::GONE, ["default"], limit: 1)
    # "poison", held alone by a second process
    build_store.fetch(ReaperTest::LIVE, ["default"], limit: 1)
    racing = Array.new(3) { Thread.new { reaper.recover(ReaperTest::LIVE) } }
    assert_equal 1, racing.sum(&:value),
      "racing recoveries move the poison job once"
    assert_equal [["poison"], ["Jiggler::Server::Reaper::PoisonJobError"]],
      [told, dead.map { |job| job["error_class"] }]
    Jiggler.store.beat(ReaperTest::GONE, "{}", 0.001)
    wait_for(message: "the registration to expire") do
      Jiggler.store.dead_processes.include?(ReaperTest::GONE)
    end
    assert_equal 1, reaper.reap, "the reaper takes what was held since, once"
    assert_equal [["alone", 2]],
      queued.map { |job| [job["args"].first, job["crashes"]] }
    assert_equal [0, 0],
      [Jiggler.store.in_flight_count(ReaperTest::GONE), reaper.reap]
  end

  it "after losing touch with the store for more than two checks, " \
    "trusts expiries again only a registration's life later" do
    one = reaper
    assert_equal 0, one.reap # in touch
    lost_at = now
    wait_for(message: "three checks' time without contact") do
      now - lost_at > 3 * Jiggler.config.reaper_interval
    end
    died_holding(ReaperTest::GONE, [job("a")])
    assert_equal 0, one.reap,
      "an expiry right after an outage may be a process that could not beat"
    grace = Jiggler.config.registration_ttl + Jiggler.config.heartbeat_interval
    back = wait_for(
      timeout: 2,
      message: "the jobs recovered after the grace"
    ) { one.reap.positive? && now }
    assert_operator back - lost_at, :>=, grace
    assert_equal ["a"], queued.map { |job| job["args"].first }
  end

  it "runs every reaper_interval once started, and stops at once" do
    died_holding(ReaperTest::GONE, [job("a")])
    in_reactor do |task|
      running = reaper
      running.start(parent: task)
      wait_for(timeout: 2, message: "the job back in its queue") do
        queued.size == 1
      end
      stopping = now
      running.stop
      assert_operator now - stopping, :<, 0.1
    end
  end
end

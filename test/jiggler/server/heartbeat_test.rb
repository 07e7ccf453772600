# frozen_string_literal: true

require "test_helper"
require "json"
require "support/loop_test"
require "jiggler/server/heartbeat"
require "jiggler/server/identity"
require "jiggler/server/workers"
require "jiggler/server/processor"

# The heartbeat registers its process at start, refreshes the registration on a thread of its own, keeps beating
# through an outage (retrying with back-off, not a whole interval later), and unregisters at stop unless told to
# leave the registration to expire. On each store, without a server.
StoreTarget.describe_each("Jiggler::Server::Heartbeat") do
  include LoopTest

  let(:identity) { Jiggler::Server::Identity.new(Jiggler.config) }
  let(:workers) do
    Jiggler::Server::Workers.new(
      concurrency: 1,
      processor: Jiggler::Server::Processor.new(
        config: Jiggler.config,
        logger: logger,
        results: nil
      )
    )
  end

  def heartbeat(store, interval: 0.02, ttl: 1)
    @heartbeat = Jiggler::Server::Heartbeat.new(
      store: store,
      identity: identity,
      workers: workers,
      interval: interval,
      ttl: ttl,
      logger: logger
    )
  end

  def teardown
    @heartbeat&.stop
    super
  end

  # When the registration was last refreshed, as the process reports it.
  def beat_at(store = Jiggler.store)
    store.processes[identity.id]&.then { |info| JSON.parse(info)["heartbeat"] }
  end

  it "registers at start, beats every interval on its thread, " \
    "and unregisters at stop" do
    heartbeat(build_store).start
    first = beat_at
    refute_nil first, "registered by the time start returns"
    beats = [first]
    wait_for(timeout: 2, message: "3 more beats") do
      (beats |= [beat_at]).size >= 4
    end
    @heartbeat.stop
    assert_empty Jiggler.store.processes
    assert_empty Jiggler.store.dead_processes
  end

  it "leaves its registration to expire when stopped with unregister: false, " \
    "so that a reaper finds the jobs left" do
    heartbeat(build_store, ttl: 0.1).start
    @heartbeat.stop(unregister: false)
    wait_for(message: "the registration to expire") do
      Jiggler.store.dead_processes == [identity.id]
    end
    assert_empty Jiggler.store.processes
  end

  it "raises ConnectionError at start when the store cannot be reached" do
    breakable.break!
    assert_raises(Jiggler::Store::ConnectionError) do
      heartbeat(breakable.store).start
    end
    @heartbeat = nil
  end

  it "keeps beating through an outage: logs it once, retries within " \
    "the back-off, logs that it works again" do
    heartbeat(breakable.store, interval: 0.02).start
    breakable.break!
    wait_for(message: "the outage logged") { logged(/ERROR: heartbeat:/).any? }
    breakable.repair!
    repaired = now
    reader = breakable.store
    wait_for(timeout: 3, message: "a beat after the outage") do
      logged(/INFO: heartbeat: working again/).any? && beat_at(reader)
    end
    # Measured 0.02-0.1 s on either store: the outage was short, so the back-off was too.
    assert_operator now - repaired, :<, 1.0,
      "the next try comes within the longest back-off (1 s), " \
      "not an interval later"
    assert_equal 1, logged(/ERROR: heartbeat:.*retrying until it works/).size
    assert_match(
      /\AINFO: heartbeat: working again after \d+\.\d s\n\z/,
      logged(/INFO/).join
    )
  end
end

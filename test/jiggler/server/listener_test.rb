# frozen_string_literal: true

require "test_helper"
require "support/loop_test"
require "jiggler/server/listener"

# The listener turns the store's announcements into wake-ups: the fetcher's when a job is pushed, the scheduler's when
# a job is scheduled sooner than the others. A store it cannot reach is logged once, and once again when it hears from
# the store. On each store, without a server.
module ListenerTest
  # Counts what the listener wakes: it stands for the fetcher (`pushed`) and the scheduler (`wake`).
  class Wakes
    attr_reader :pushes, :schedules

    def initialize
      @pushes = 0
      @schedules = 0
    end

    def pushed = @pushes += 1

    def wake = @schedules += 1
  end
end

StoreTarget.describe_each("Jiggler::Server::Listener") do
  include LoopTest

  let(:wakes) { ListenerTest::Wakes.new }

  def job
    Jiggler::Payload.dump({
      "jid" => SecureRandom.hex(12),
      "name" => "RecordJob",
      "args" => [1],
      "queue" => "default"
    })
  end

  # Runs a listener on `store` in a reactor until the block returns.
  def listening(store: build_store)
    in_reactor do |task|
      listener = Jiggler::Server::Listener.new(
        store: store,
        fetcher: wakes,
        scheduler: wakes,
        logger: logger
      )
      listener.start(parent: task)
      yield
    ensure
      listener.stop
    end
  end

  # Whether the listener subscribed (Redis, PostgreSQL); the SQLite listener reads the counters as it starts, before it
  # yields.
  def subscribed?
    case target_name
    when "sqlite" then true
    when "postgres" then postgres_listening?
    else
      redis.call("PUBSUB", "NUMSUB", "{#{@namespace}}:wake").last.positive?
    end
  end

  # A session whose last statement was the LISTEN of this namespace's channel: a subscription, waiting.
  def postgres_listening?
    channel = "jiggler_#{Digest::SHA256.hexdigest(@namespace)[0, 24]}"
    PG.connect(PostgresServer.instance.url) do |db|
      db.exec_params(
        "SELECT 1 FROM pg_stat_activity WHERE query = $1",
        ["LISTEN \"#{channel}\""]
      ).ntuples.positive?
    end
  end

  it "wakes the fetcher when a job is pushed, and the scheduler when a job " \
    "is scheduled sooner than the others" do
    listening do
      wait_for(message: "the subscription") { subscribed? }
      Jiggler.store.push("default", [job])
      # Once or twice: on PostgreSQL, a push while the new subscription looks for work left from before it (after its
      # LISTEN) is both found and heard.
      wait_for(timeout: 1, message: "the fetcher woken") { wakes.pushes >= 1 }
      Jiggler.store.schedule([[Time.now.to_f + 3_600, job]])
      wait_for(timeout: 1, message: "the scheduler woken") do
        wakes.schedules == 1
      end
      # Announcements come in order: the first push's is in by now.
      pushes = wakes.pushes
      # later than the others: nobody to wake
      Jiggler.store.schedule([[Time.now.to_f + 7_200, job]])
      Jiggler.store.push("other", [job])
      wait_for(timeout: 1, message: "the fetcher woken again") do
        wakes.pushes == pushes + 1
      end
      assert_equal 1, wakes.schedules
    end
  end

  # Pushes to a new, empty queue (a push to an empty queue is announced) until the listener hears one.
  def push_until_heard(pusher)
    heard = wakes.pushes
    probes = 0
    wait_for(timeout: 3, message: "a push heard") do
      pusher.push("probe-#{probes += 1}", [job])
      wakes.pushes > heard
    end
  end

  it "logs a store it lost once, retries with back-off, and logs that " \
    "it works again when it hears from it" do
    listening(store: breakable.store) do
      push_until_heard(breakable.store)
      breakable.break!
      wait_for(message: "the outage logged") { logged(/ERROR: listener:/).any? }
      breakable.repair!
      push_until_heard(breakable.store)
      assert_equal 1, logged(/ERROR: listener:.*retrying until it works/).size
      assert_match(
        /\AINFO: listener: working again after \d+\.\d s\n\z/,
        logged(/INFO/).join
      )
    end
  end
end

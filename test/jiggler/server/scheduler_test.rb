# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "async"
require "jiggler/store/sqlite"
require "jiggler/server/scheduler"
require "jiggler/server/listener"

# The scheduler sleeps until the earliest scheduled job or retry is due, and a job scheduled sooner than the others
# wakes it through the listener: jobs start on time although the scheduler polls only every `poll_interval`.
module SchedulerTest
  # What the listener wakes on a push; these specs schedule only.
  class IdleFetcher
    def pushed = nil
  end

  SPECS = proc do
    # Runs a scheduler checking at least every `interval` seconds, and a listener, each on a store of its own.
    def run_scheduler(interval: 60)
      Sync do |task|
        scheduler = Jiggler::Server::Scheduler.new(
          store: build_store,
          interval: interval,
          logger: Jiggler.logger
        )
        listener_store = build_store
        listener = Jiggler::Server::Listener.new(
          store: listener_store,
          fetcher: IdleFetcher.new,
          scheduler: scheduler,
          logger: Jiggler.logger
        )
        scheduler.start(parent: task)
        listener.start(parent: task)
        wait_for(message: "the listener to subscribe") { listening? }
        task.with_timeout(20) { yield }
      ensure
        listener&.stop
        scheduler&.stop
        listener_store&.close
      end
    end

    def job
      Jiggler::Payload.dump({
        "jid" => SecureRandom.hex(12),
        "name" => "RecordJob",
        "args" => [1],
        "queue" => "default"
      })
    end

    def now = Time.now.to_f

    # Seconds until the scheduled jobs are in their queue, polling the store from here.
    def seconds_until_queued(count, since)
      wait_for(message: "#{count} jobs queued") do
        jobs.queue_sizes["default"] == count
      end
      now - since
    end

    let(:jobs) { build_store }

    it "moves a job scheduled sooner than the others when it is due, " \
      "well before the next poll" do
      jobs.schedule([[now + 3_600, job]])
      run_scheduler do
        scheduled_at = now
        jobs.schedule([[scheduled_at + 0.3, job]])
        waited = seconds_until_queued(1, scheduled_at)
        assert_operator waited, :>=, 0.3
        assert_operator waited, :<, 0.3 + 0.2,
          "moved when due, woken by the listener (measured 0.31-0.32 s)"
      end
    end

    it "sleeps until the earliest job is due, not a whole interval" do
      started = now
      jobs.schedule([[started + 0.5, job], [started + 1.0, job]])
      run_scheduler do
        # Each moved when due (measured 0.51-0.52 s and 1.00-1.02 s), not at a later check.
        assert_operator seconds_until_queued(1, started), :<, 0.5 + 0.2
        assert_operator seconds_until_queued(2, started), :<, 1.0 + 0.2
      end
    end

    it "finds a retry, which is not announced, within the interval" do
      run_scheduler(interval: 0.3) do
        failed_at = now
        jobs.push("default", [job])
        fetched, = jobs.fetch("worker", ["default"], limit: 1)
        failed = Jiggler::Store::Failed.new(
          fetched: fetched,
          set: :retry,
          at: failed_at + 0.1,
          payload: job
        )
        jobs.fail(
          "worker",
          [failed],
          reliable: true,
          dead_cutoff: 0,
          dead_max: 10
        )
        # Due after 0.1 s, found by the next check, 0.3 s at most later (measured 0.28-0.32 s).
        assert_operator seconds_until_queued(1, failed_at), :<, 0.1 + 0.3 + 0.2
      end
    end
  end
end

describe "Jiggler::Server::Scheduler on Redis" do
  def build_store = Jiggler::Store.dedicated(Jiggler.config)

  def listening?
    redis.call("PUBSUB", "NUMSUB", "{#{@namespace}}:wake:schedule")
      .last.positive?
  end

  class_eval(&SchedulerTest::SPECS)
end

describe "Jiggler::Server::Scheduler on SQLite" do
  def build_store
    @dir ||= Dir.mktmpdir("jiggler-scheduler")
    Jiggler::Store::SQLite.new(path: File.join(@dir, "jobs.sqlite3"))
  end

  # The listener reads the announcement counters as it starts, before it first yields.
  def listening? = true

  class_eval(&SchedulerTest::SPECS)
end

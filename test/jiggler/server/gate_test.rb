# frozen_string_literal: true

require "test_helper"
require "support/loop_test"
require "jiggler/server/fetcher"
require "jiggler/server/gate"
require "jiggler/server/executions"
require "jiggler/store/cancel_request"
require "jiggler/server/workers"
require "jiggler/metrics/recorder"

# A job the gate moves off flight (to wait for its slot) did not run and is no longer its delivery's: the fetcher
# must not acknowledge it, since by then its handle may name a new delivery of the same job (an SQLite row is fetched
# again under its id once its slot frees), and metrics must not count it. Real workers, processor, gate and fetcher on
# each store, driven step by step; no server process.
module GateTest
  PROCESS = "gate-test:process"
  KEY = "GateTest::OneAtOnceJob"

  # At most one at once; its key is the class.
  class OneAtOnceJob
    include Jiggler::Job

    job_options concurrency: {limit: 1, ttl: 60}

    def perform = nil
  end

  # One at once too, and fails every time.
  class FailingOneAtOnceJob
    include Jiggler::Job

    job_options concurrency: {limit: 1, ttl: 60}

    def perform = raise("it fails")
  end
end

StoreTarget.describe_each("Jiggler::Server::Gate") do
  include LoopTest

  # Workers running jobs through a processor with a gate, reporting to a fetcher whose loop is not started: the test
  # fetches by hand, and `fetcher.stop` sends what the fetcher would acknowledge.
  def pipeline(task, reliable: true, metrics: nil)
    store = Jiggler.store
    gate = Jiggler::Server::Gate.new(
      process: GateTest::PROCESS,
      reliable: reliable,
      store: -> { store }
    )
    processor = Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: logger,
      results: store,
      gate: gate,
      metrics: metrics
    )
    workers = Jiggler::Server::Workers.new(concurrency: 1, processor: processor)
    fetch_store = build_store
    suspects = Jiggler::Server::Suspects.new(
      store: fetch_store,
      process: GateTest::PROCESS,
      reliable: reliable
    )
    fetcher = Jiggler::Server::Fetcher.new(
      store: fetch_store,
      process: GateTest::PROCESS,
      config: Jiggler.config,
      workers: workers,
      suspects: suspects,
      logger: logger
    )
    workers.start(parent: task, reporter: fetcher)
    [fetcher, workers]
  end

  # Another job holds the key's one slot.
  def hold_slot
    elsewhere = Jiggler::Store::Fetched.new("0|default", "default", "{}")
    assert Jiggler.store.acquire_slot(
      "elsewhere",
      elsewhere,
      key: GateTest::KEY,
      limit: 1,
      jid: "holder",
      ttl: 60,
      reliable: true
    )
  end

  def free_slot
    Jiggler.store.release_slot(GateTest::KEY, "holder", limit: 1, ttl: 60)
  end

  def fetch(reliable: true)
    Jiggler.store.fetch(
      GateTest::PROCESS,
      ["default"],
      limit: 1,
      reliable: reliable
    )
  end

  def work(workers, jobs)
    workers.assign(jobs)
    wait_for(message: "the workers to be done") { workers.idle? }
  end

  # When a job's slot of `key` expires (epoch seconds), nil when it holds none.
  def slot_expiry(key, jid)
    store = Jiggler.store
    case target_name
    when "sqlite"
      store.with do |db|
        db.get_first_value(
          "SELECT expires_at FROM limit_slots WHERE key = ? AND jid = ?",
          [key, jid]
        )
      end
    when "postgres"
      sql = "SELECT expires_at FROM " \
        "#{PG::Connection.quote_ident(@namespace)}.limit_slots " \
        "WHERE key = $1 AND jid = $2"
      store.with { |db| db.exec_params(sql, [key, jid]).values.dig(0, 0) }&.to_f
    else
      store.with do |redis|
        redis.call("ZSCORE", store.keys.limit("slots", key), jid)
      end&.to_f
    end
  end

  it "reads a raw payload's ttl of 1e400 as a year and its limit of 0 as 1: " \
    "its slot expires, the job runs" do
    {
      "forever" => %("limit":1,"ttl":1e400),
      "none" => %("limit":0,"ttl":60)
    }.each do |key, setting|
      Jiggler.store.push("default", [
        %({"jid":"#{key}","name":"X","args":[],"limits":{"concurrency":{"key":"#{key}",#{setting}}}})
      ])
    end
    gate = Jiggler::Server::Gate.new(
      process: GateTest::PROCESS,
      reliable: true,
      store: -> { Jiggler.store }
    )
    in_reactor do
      %w[forever none].each do |key|
        fetched = fetch.first
        job = Jiggler::Payload.load(fetched.payload)
        assert gate.enter(fetched, job, job["limits"]), "#{key}: the job runs"
        assert_operator slot_expiry(key, key),
          :<=,
          Time.now.to_f + 366 * 86_400,
          key
        gate.leave(job)
        assert_nil slot_expiry(key, key)
      end
    end
  end

  it "never acknowledges a job it moved to wait for its slot, " \
    "so the next delivery of that job stays in flight" do
    in_reactor do |task|
      fetcher, workers = pipeline(task)
      hold_slot
      GateTest::OneAtOnceJob.enqueue
      work(workers, fetch)
      assert_equal({"default" => 1}, Jiggler.store.waiting_counts)
      free_slot
      again = fetch
      assert_equal 1, again.size, "the job is back once its slot freed"
      # sends the acknowledgements it holds
      fetcher.stop(1)
      assert_equal again.map(&:handle),
        Jiggler.store.in_flight(GateTest::PROCESS).map(&:handle),
        "the new delivery was acknowledged"
      assert_equal 0, Jiggler.store.counts[:processed]
    end
  end

  it "ends a job cancelled before it reaches its limit as cancelled, " \
    "without its waiting for a slot" do
    executions = Jiggler::Server::Executions.new(logger: logger)
    executions.requested([
      Jiggler::Store::CancelRequest.new(
        jid: "c" * 24,
        by: "ops",
        at: Time.now.to_f
      )
    ])
    gate = Jiggler::Server::Gate.new(
      process: GateTest::PROCESS,
      reliable: true,
      store: -> { Jiggler.store }
    )
    processor = Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: logger,
      results: Jiggler.store,
      gate: gate,
      executions: executions
    )
    hold_slot
    limits = {
      "concurrency" => {"key" => GateTest::KEY, "limit" => 1, "ttl" => 60}
    }
    Jiggler.store.push("default", [
      JSON.dump(
        "jid" => "c" * 24,
        "name" => GateTest::KEY,
        "args" => [],
        "limits" => limits
      )
    ])
    in_reactor do
      failed = processor.call(fetch.first)
      assert_equal [:cancelled, "ops"],
        [
          failed.set,
          Jiggler::Payload.load(failed.payload).dig("cancelled", "by")
        ]
      assert_equal({}, Jiggler.store.waiting_counts)
    end
  ensure
    executions&.stop
  end

  it "counts a job that waits for its slot neither as a run nor " \
    "as processed, in at-most-once mode too" do
    metrics = Jiggler::Metrics::Recorder.new
    Jiggler.config[:mode] = :at_most_once
    in_reactor do |task|
      fetcher, workers = pipeline(task, reliable: false, metrics: metrics)
      hold_slot
      GateTest::OneAtOnceJob.enqueue
      work(workers, fetch(reliable: false))
      fetcher.stop(1)
      metrics.hand_over
      assert_equal [{}, 0],
        [metrics.take, Jiggler.store.counts[:processed]]
      free_slot
      work(workers, fetch(reliable: false))
      fetcher.stop(1)
      metrics.hand_over
      assert_equal [{GateTest::KEY => 1}, 1],
        [
          metrics.take.transform_values(&:processed),
          Jiggler.store.counts[:processed]
        ]
    end
  end

  # A limited job that fails gives its slot back at once (README, Concurrency limits: "when a job of the key ends
  # (succeeds, fails or dies)"), not only when the slot's ttl expires: the next job of its key runs, it does not wait.
  it "frees the slot of a job that fails, so the next job of its key runs" do
    key = GateTest::FailingOneAtOnceJob.name
    in_reactor do |task|
      _fetcher, workers = pipeline(task)
      first = GateTest::FailingOneAtOnceJob.enqueue
      work(workers, fetch)
      assert_nil slot_expiry(key, first),
        "the failed job still holds its slot"
      GateTest::FailingOneAtOnceJob.enqueue
      work(workers, fetch)
      assert_equal(
        {},
        Jiggler.store.waiting_counts,
        "the next job waits for the failed job's slot"
      )
      assert_equal 2, logged(/retry: #{key} /).size, "both jobs ran and failed"
    end
  end
end

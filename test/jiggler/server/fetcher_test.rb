# frozen_string_literal: true

require "test_helper"
require "async"
require "async/queue"
require "delegate"
require "jiggler/server/processor"
require "jiggler/server/workers"
require "jiggler/server/fetcher"
require "jiggler/server/listener"
require "support/loop_test"

# Jobs for the fetcher tests; what they do is recorded in EVENTS.
module FetcherTest
  EVENTS = []
  PROCESS = "fetcher-test:1"

  class << self
    attr_accessor :gate, :on_gate
  end

  class Record
    include Jiggler::Job

    def perform(value) = EVENTS << value
  end

  # Records "gate" (calling `on_gate` when set), then waits for the test to let it finish.
  class Gated
    include Jiggler::Job

    def perform
      EVENTS << "gate"
      FetcherTest.on_gate&.call
      FetcherTest.gate.dequeue
    end
  end

  # Takes a couple of milliseconds, so that workers stay busy while the fetcher keeps jobs ready for them.
  class Brief
    include Jiggler::Job

    def perform(value)
      sleep(0.002)
      EVENTS << value
    end
  end

  class Failing
    include Jiggler::Job

    job_options retries: 3

    def perform = raise(ArgumentError, "failed on purpose")
  end

  # The real store, counting the fetches made through it, and the waits in Redis as they begin (calling `on_wait`
  # first, when set).
  class FetchCounter < SimpleDelegator
    attr_accessor :on_wait

    def fetches = @fetches ||= 0

    def waits = @waits ||= 0

    def fetch(...)
      __getobj__.fetch(...).tap { @fetches = fetches + 1 }
    end

    def fetch_when_pushed(...)
      @waits = waits + 1
      on_wait&.call
      __getobj__.fetch_when_pushed(...)
    end

    # The listener's waits for an announcement, counted as they begin.
    def wake_waits = @wake_waits ||= 0

    def wait_for_wake(...)
      @wake_waits = wake_waits + 1
      __getobj__.wait_for_wake(...)
    end
  end

  # The real store, noting the limit of every fetch and the handles it gave.
  class HandleLog < SimpleDelegator
    def calls = @calls ||= []

    def fetch(process, queues, limit:, **options)
      __getobj__.fetch(process, queues, limit: limit, **options).tap do |jobs|
        calls << [limit, jobs.map(&:handle)]
      end
    end
  end

  # The real store behind a slow network: each fetch answers `delay` seconds late (the sleep
  # yields to the reactor, as a wait for the reply does).
  class SlowFetches < HandleLog
    def initialize(store, delay)
      super(store)
      @delay = delay
    end

    def fetch(...)
      sleep(@delay)
      super
    end
  end
end

# What the fetcher tests share: a fetcher, its workers and a listener on a real store, and when they are done.
module FetcherServing
  def setup
    super
    FetcherTest::EVENTS.clear
    FetcherTest.gate = Async::Queue.new
    FetcherTest.on_gate = nil
  end

  # Runs a fetcher and its workers on a real store inside a reactor, yields the fetcher, and stops both afterwards.
  def serve(
    concurrency: 2,
    queues: ["default"],
    mode: :at_least_once,
    store: Jiggler::Store.dedicated(Jiggler.config),
    listen: true
  )
    Jiggler.configure do |config|
      config[:queues] = queues
      config[:mode] = mode
    end
    Sync do |task|
      suspects = Jiggler::Server::Suspects.new(
        store: store,
        process: FetcherTest::PROCESS,
        reliable: mode == :at_least_once
      )
      processor = Jiggler::Server::Processor.new(
        config: Jiggler.config,
        logger: Jiggler.logger,
        results: store,
        alone: suspects.method(:alone?)
      )
      workers = Jiggler::Server::Workers.new(
        concurrency: concurrency,
        processor: processor
      )
      fetcher = Jiggler::Server::Fetcher.new(
        store: store,
        process: FetcherTest::PROCESS,
        config: Jiggler.config,
        workers: workers,
        suspects: suspects,
        logger: Jiggler.logger
      )
      workers.start(parent: task, reporter: fetcher)
      fetcher.start(parent: task)
      listener = Jiggler::Server::Listener.new(
        store: store,
        fetcher: fetcher,
        scheduler: nil,
        logger: Jiggler.logger
      )
      listener.start(parent: task) if listen
      task.with_timeout(20) { yield fetcher }
    ensure
      listener&.stop
      workers&.stop(0)
      fetcher&.stop(1)
      # a wait cut short leaves its connection blocked in Redis, where the
      # next test would see it
      store.close
    end
  end

  def settled?(processed)
    store.in_flight_count(FetcherTest::PROCESS).zero? &&
      store.counts[:processed] == processed
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# The fetcher on each store (StoreTarget): what it promises whatever the store.
StoreTarget.describe_each("Jiggler::Server::Fetcher") do
  include LoopTest
  include FetcherServing

  it "runs pushed jobs and acknowledges them to the store" do
    FetcherTest::Record.enqueue_bulk((1..20).zip)
    serve do
      wait_for(message: "20 jobs acknowledged") { settled?(20) }
    end
    assert_equal (1..20).to_a, FetcherTest::EVENTS.sort
    assert_equal({}, store.queue_sizes)
  end

  # An in-flight handle used twice overwrites the record of the job that had it: that job is then lost.
  it "never gets an in-flight handle twice, however far ahead of its " \
    "workers it fetches" do
    FetcherTest::Brief.enqueue_bulk((1..300).zip)
    log = FetcherTest::HandleLog.new(Jiggler::Store.dedicated(Jiggler.config))
    serve(concurrency: 10, store: log) do
      wait_for(message: "300 jobs acknowledged") { settled?(300) }
    end
    assert_equal [], log.calls.reject { |limit, _| limit >= 0 },
      "no fetch has a negative limit"
    assert_equal 300, log.calls.flat_map(&:last).uniq.size
  end

  # Short jobs behind a slow round trip: workers that run their batch in far less time than the
  # round trip takes would wait for it, whatever the queue holds (before: at most twice the
  # concurrency per round trip).
  it "takes as many short jobs ahead as its workers run in one round trip" do
    FetcherTest::Record.enqueue_bulk((1..2_000).zip)
    log = FetcherTest::SlowFetches.new(
      Jiggler::Store.dedicated(Jiggler.config),
      0.005
    )
    serve(concurrency: 2, store: log) do
      wait_for(message: "2000 jobs acknowledged") { settled?(2_000) }
    end
    limits = log.calls.map(&:first)
    assert_operator limits.max, :>, 4,
      "a fetch took more than twice the concurrency"
    assert_operator limits.size, :<, 100, "round trips for 2000 jobs"
    assert_equal 2_000, FetcherTest::EVENTS.uniq.size
  end

  it "moves failed jobs out of flight into the retry set" do
    FetcherTest::Failing.enqueue
    serve do
      wait_for(message: "a retry") { store.counts[:retry] == 1 }
      wait_for(message: "nothing in flight") do
        store.in_flight_count(FetcherTest::PROCESS).zero?
      end
    end
    assert_equal [0, 1], store.counts.values_at(:processed, :failures)
    assert_equal "ArgumentError",
      Jiggler::Payload.load(
        store.set_entries(:retry).first.first
      )["error_class"]
  end

  it "sends an unreadable payload to the dead set and goes on" do
    store.push("default", ["not a job"])
    FetcherTest::Record.enqueue(1)
    serve do
      wait_for(message: "dead job and the next one run") do
        store.counts[:dead] == 1 && settled?(1)
      end
    end
    assert_equal [1], FetcherTest::EVENTS
  end

  it "takes no new jobs once quiet, but still acknowledges running ones" do
    FetcherTest::Gated.enqueue
    serve do |fetcher|
      wait_for(message: "gated job to start") do
        FetcherTest::EVENTS == ["gate"]
      end
      fetcher.quiet
      FetcherTest::Record.enqueue(2)
      FetcherTest.gate.enqueue(true)
      wait_for(message: "gated job acknowledged") do
        store.counts[:processed].positive?
      end
    end
    assert_equal({"default" => 1}, store.queue_sizes)
    assert_equal ["gate"], FetcherTest::EVENTS
  end

  it "runs every job of a higher priority queue first" do
    FetcherTest::Record.with_options(queue: "low")
      .enqueue_bulk([["low1"], ["low2"], ["low3"]])
    FetcherTest::Record.with_options(queue: "high")
      .enqueue_bulk([["high1"], ["high2"], ["high3"]])
    serve(concurrency: 1, queues: [["low", 0], ["high", 1]]) do
      wait_for(message: "6 jobs") { FetcherTest::EVENTS.size == 6 }
    end
    assert_equal %w[high1 high2 high3 low1 low2 low3], FetcherTest::EVENTS
  end

  it "records nothing in flight at most once" do
    FetcherTest::Gated.enqueue
    serve(mode: :at_most_once) do
      wait_for(message: "gated job to start") do
        FetcherTest::EVENTS == ["gate"]
      end
      assert_equal [0, {}],
        [store.in_flight_count(FetcherTest::PROCESS), store.queue_sizes]
      FetcherTest.gate.enqueue(true)
      wait_for(message: "gated job counted") { store.counts[:processed] == 1 }
    end
  end
  # Whether the listener waits for announcements: on Redis, subscribed (PUBSUB NUMSUB); on SQLite and PostgreSQL, in
  # its first wait (the SQLite store reads the counters it compares with before that wait yields).
  def listening?(counter)
    return counter.wake_waits.positive? unless target_name == "redis"
    redis.call("PUBSUB", "NUMSUB", "{#{@namespace}}:wake").last.positive?
  end

  # README: a push wakes an idle server (on Redis a PUBLISH, on SQLite the doorbell), well before its next poll.
  it "starts a job pushed while idle well before the next poll, " \
    "woken by the listener when it fetches two queues" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    serve(store: counter, queues: ["default", "other"]) do
      wait_for(message: "listener") { listening?(counter) }
      fetches = counter.fetches
      wait_for(message: "an idle fetch") { counter.fetches > fetches }
      pushed = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      FetcherTest::Record.enqueue(1)
      wait_for(message: "job to run") { FetcherTest::EVENTS.any? }
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - pushed,
        :<,
        Jiggler::Server::Fetcher::IDLE_POLL / 4
    end
  end

  # The dead jobs' payloads, by jid.
  def dead_jids
    store.set_entries(:dead).map do |payload, _|
      Jiggler::Payload.load(payload)["jid"]
    end
  end

  # Serves until `count` more jobs failed (to the dead set: they have no retries) and none is in flight.
  def serve_until_dead(count)
    failures = store.counts[:failures] + count
    serve do
      wait_for(message: "#{count} more failures") do
        store.counts[:failures] == failures && settled?(0)
      end
    end
  end

  # README, Retries and the dead set: the dead set "keeps at most dead_max_jobs jobs": the setting, read by the
  # server, trims the oldest as jobs die.
  it "keeps at most dead_max_jobs jobs in the dead set, " \
    "as the server writes deaths" do
    FetcherTest::Failing.with_options(retries: 0)
      .enqueue_bulk(Array.new(4) { [] })
    serve_until_dead(4)
    assert_equal 4, store.counts[:dead], "the default keeps them all"
    Jiggler.configure { |config| config[:dead_max_jobs] = 2 }
    newest = FetcherTest::Failing.with_options(retries: 0).enqueue
    serve_until_dead(1)
    assert_equal 2, store.counts[:dead]
    assert_includes dead_jids, newest, "the newest death is kept"
  end

  # README: the dead set keeps jobs "for at most dead_timeout": a job that died longer ago is dropped when the server
  # writes the next death.
  it "drops dead jobs older than dead_timeout, as the server writes deaths" do
    old = Jiggler::Payload.dump({
      "jid" => "old",
      "name" => "FetcherTest::Failing",
      "args" => [],
      "queue" => "default"
    })
    @target.plant(store, :dead, Time.now.to_f - 7_200, old)
    FetcherTest::Failing.with_options(retries: 0).enqueue
    serve_until_dead(1)
    assert_includes dead_jids, "old",
      "the default (180 days) keeps a job dead for 2 hours"
    Jiggler.configure { |config| config[:dead_timeout] = 3_600 }
    newest = FetcherTest::Failing.with_options(retries: 0).enqueue
    serve_until_dead(1)
    refute_includes dead_jids, "old",
      "a job dead for 2 hours outlived a dead_timeout of 1 hour"
    assert_includes dead_jids, newest
  end
end

# The fetcher on Redis: its wait in Redis for a push (BLMOVE) and the listener's PUBLISH.
describe "Jiggler::Server::Fetcher on Redis" do
  include FetcherServing

  # The ids of the connections blocked in a wait for a push (BLMOVE).
  def waiting_in_redis
    redis.call("CLIENT", "LIST").lines
      .grep(/ cmd=blmove /)
      .map { |line| line[/\Aid=(\d+)/, 1] }
  end

  # Whether the fetcher counted by `counter` began a wait in Redis, and Redis shows a connection blocked in one.
  def waiting?(counter) = counter.waits.positive? && waiting_in_redis.any?

  it "takes a job pushed while it is idle in the reply to its wait in Redis, " \
    "without the listener" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    serve(store: counter, listen: false) do
      wait_for(message: "a wait in Redis") { waiting?(counter) }
      fetches = counter.fetches
      pushed = now
      FetcherTest::Record.enqueue(1)
      wait_for(message: "the job to run") { FetcherTest::EVENTS.any? }
      assert_operator now - pushed, :<, Jiggler::Server::Fetcher::IDLE_POLL / 4
      # Counted once its reply is read, which may be after Redis shows the job acknowledged.
      wait_for(message: "the job acknowledged") do
        settled?(1) && counter.fetches > fetches
      end
      assert_equal fetches + 1, counter.fetches,
        "one fetch, to acknowledge the job, and none to take it"
    end
  end

  it "stops at once while waiting in Redis, and once quiet there takes " \
    "no job" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    serve(store: counter) do |fetcher|
      wait_for(message: "a wait in Redis") { waiting?(counter) }
      fetcher.quiet
      FetcherTest::Record.enqueue(1)
      sleep 0.3
      assert_equal [[], {"default" => 1}, 0],
        [
          FetcherTest::EVENTS,
          store.queue_sizes,
          store.in_flight_count(FetcherTest::PROCESS)
        ]
      started = now
      fetcher.stop(1)
      assert_operator now - started, :<, 1
    end
    assert_equal({"default" => 1}, store.queue_sizes)
  end

  # The task that waits in Redis runs up to its first I/O before the fetcher hears of it: a quiet may come in between.
  it "cuts short a wait in Redis that a quiet meets as it begins, " \
    "and takes no job" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    # keeps the fetcher from waiting in Redis until the quiet is in place
    FetcherTest::Gated.enqueue
    serve(store: counter) do |fetcher|
      wait_for(message: "gated job to start") do
        FetcherTest::EVENTS == ["gate"]
      end
      counter.on_wait = -> { fetcher.quiet }
      FetcherTest.gate.enqueue(true)
      wait_for(message: "a wait in Redis to begin") { counter.waits.positive? }
      FetcherTest::Record.enqueue(1)
      sleep 0.3
      assert_equal [["gate"], {"default" => 1}, 0],
        [
          FetcherTest::EVENTS,
          store.queue_sizes,
          store.in_flight_count(FetcherTest::PROCESS)
        ]
    end
  end

  # The first job a wait takes starts before the wait's task ends, which a quiet may then cut short.
  it "starts every job a wait in Redis took, though a quiet cuts the wait " \
    "short while the first one runs" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    serve(store: counter) do |fetcher|
      wait_for(message: "a wait in Redis") { waiting?(counter) }
      FetcherTest.on_gate = -> { fetcher.quiet }
      FetcherTest::Gated.enqueue_bulk([[], []])
      wait_for(message: "both jobs to start") do
        FetcherTest::EVENTS == ["gate", "gate"]
      end
      2.times { FetcherTest.gate.enqueue(true) }
      wait_for(message: "both jobs acknowledged") { settled?(2) }
    end
  end

  it "loses nothing when its connection is killed during the wait, " \
    "and waits again" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    serve(store: counter, listen: false) do
      wait_for(message: "a wait in Redis") { waiting?(counter) }
      killed = waiting_in_redis.first
      # The job and the kill in one step: the wait is cut before Redis serves it the job.
      redis.multi do |transaction|
        transaction.call(
          "LPUSH",
          "{#{@namespace}}:queue:default",
          Jiggler::Payload.dump({
            "jid" => "1",
            "name" => "FetcherTest::Record",
            "args" => [1],
            "queue" => "default",
            "retries" => 0
          })
        )
        transaction.call("CLIENT", "KILL", "ID", killed)
      end
      wait_for(message: "the job to run after the outage") do
        FetcherTest::EVENTS == [1]
      end
      wait_for(message: "the job acknowledged") { settled?(1) }
      wait_for(message: "a new wait in Redis") do
        (waiting_in_redis - [killed]).any?
      end
      FetcherTest::Record.enqueue(2)
      wait_for(message: "the next job") { FetcherTest::EVENTS == [1, 2] }
    end
    assert_equal({}, store.queue_sizes)
  end

  it "waits the ordinary way for a paused queue, instead of being woken " \
    "by its jobs again and again" do
    counter = FetcherTest::FetchCounter.new(
      Jiggler::Store.dedicated(Jiggler.config)
    )
    store.pause_queue("default")
    FetcherTest::Record.enqueue(1)
    serve(store: counter) do
      sleep 0.5
      assert_operator counter.fetches + counter.waits, :<=, 4
    end
    assert_equal [], FetcherTest::EVENTS
  end
end

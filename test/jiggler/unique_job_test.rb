# frozen_string_literal: true

require "test_helper"
require "support/web_session"
require "support/loop_test"
require "async"
require "jiggler/server/processor"

describe Jiggler::UniqueJob do
  include WebSession

  it "checks the option, naming what is wrong" do
    assert_equal(
      {until: :finished, ttl: 3600, on_conflict: :skip, key: nil},
      Jiggler::UniqueJob.options(true)
    )
    {
      {until: :done} => /until must be one of :started, :finished/,
      {ttl: 0} => /ttl must be a number/,
      {ttl: Float::INFINITY} =>
        /ttl must be a number of seconds > 0 and at most 31622400 \(a year\) \(got Infinity\)/,
      {on_conflict: :log} => /on_conflict must be one of/,
      {key: "id"} => /key must be a Proc/,
      {by: :args} => /unknown unique option :by/,
      "yes" => /unique must be true or a Hash/
    }.each do |value, message|
      assert_match message,
        assert_raises(ArgumentError) {
          Jiggler::UniqueJob.options(value)
        }.message
    end
    batch = Class.new { include Jiggler::Job }
    assert_raises(ArgumentError) do
      batch.job_options(unique: true, batch_size: 10)
    end
    assert_raises(ArgumentError) do
      batch.job_options(concurrency: {limit: 1}, batch_size: 10)
    end
  end

  it "locks by class and arguments, or by the key computed from them" do
    by_args = Jiggler::UniqueJob.options(true)
    by_key = Jiggler::UniqueJob.options(key: ->(account, _) { account })
    refute_equal Jiggler::UniqueJob.lock_key("A", [1, 2], by_args),
      Jiggler::UniqueJob.lock_key("A", [1, 3], by_args)
    refute_equal Jiggler::UniqueJob.lock_key("A", [1, 2], by_args),
      Jiggler::UniqueJob.lock_key("B", [1, 2], by_args)
    assert_equal "A:7", Jiggler::UniqueJob.lock_key("A", [7, 2], by_key)
  end
end

# The releases of a unique job's lock, on each store (StoreTarget): the README promises them on SQLite as on Redis.
StoreTarget.describe_each("releasing Jiggler::UniqueJob's locks") do
  include LoopTest
  include WebSession

  it "gives the lock back when its job is killed or deleted from a set, " \
    "as the dashboard and the admin commands do" do
    require "jiggler/set_actions"
    %w[k1 d1].each do |jid|
      job = payload(
        name: "FailingJob",
        jid: jid,
        args: [1],
        unique: {"lock" => "FailingJob:#{jid}", "until" => "finished"}
      )
      store.enqueue_unique(
        "FailingJob:#{jid}",
        jid,
        60,
        queue: "default",
        payload: job,
        at: Time.now.to_f + 60
      )
    end
    entry = ->(jid) {
      store.set_entries(:scheduled).filter_map do |json, score|
        [score, jid] if JSON.parse(json)["jid"] == jid
      end
    }
    assert_equal 1,
      Jiggler::SetActions.kill(store, :scheduled, entry.call("k1"))
    assert_equal 1,
      Jiggler::SetActions.delete(store, :scheduled, entry.call("d1"))
    assert_equal [nil, nil],
      [store.lock_holder("FailingJob:k1"), store.lock_holder("FailingJob:d1")]
    # Read before a server fetched it: the delete finds nothing, and the running job keeps its lock.
    job = payload(
      name: "FailingJob",
      jid: "q1",
      args: [1],
      unique: {"lock" => "FailingJob:q1", "until" => "finished"}
    )
    store.enqueue_unique(
      "FailingJob:q1", "q1", 60, queue: "default", payload: job
    )
    read = store.queue_entries("default")
    store.fetch("unique-test", ["default"], limit: 1)
    refute Jiggler::UniqueJob.released(store, read) {
      store.delete_queue_entry("default", read.first)
    }
    assert_equal "q1", store.lock_holder("FailingJob:q1")
  end

  it "releases the lock when the job dies, not when it waits for a retry" do
    processor = Jiggler::Server::Processor.new(
      config: Jiggler.config, logger: Logger.new(File::NULL), results: store
    )
    [[1, "j1"], [0, "j2"]].each do |retries, jid|
      store.enqueue_unique(
        "FailingJob:#{jid}", jid, 60, queue: "default", payload: payload
      )
      job = payload(
        name: "FailingJob",
        jid: jid,
        args: [1],
        retries: retries,
        unique: {"lock" => "FailingJob:#{jid}", "until" => "finished"}
      )
      processor.call(Jiggler::Store::Fetched.new("h", "default", job))
    end
    assert_equal "j1", store.lock_holder("FailingJob:j1"),
      "retrying: still locked"
    assert_nil store.lock_holder("FailingJob:j2"), "dead: released"
  end

  it "releases the lock of a job deleted or killed from the dashboard" do
    %w[j1 j2].each do |jid|
      store.enqueue_unique(
        "RecordJob:#{jid}", jid, 60, queue: "default", payload: payload
      )
    end
    add_failed(
      :retry,
      [
        [
          100.0,
          payload(
            jid: "j1", unique: {"lock" => "RecordJob:j1", "until" => "finished"}
          )
        ],
        [
          200.0,
          payload(
            jid: "j2", unique: {"lock" => "RecordJob:j2", "until" => "finished"}
          )
        ]
      ]
    )
    post_form "/retries", {"do" => "delete", "keys" => ["100.0-j1"]}
    post_form "/retries", {"do" => "kill", "keys" => ["200.0-j2"]}
    assert_nil store.lock_holder("RecordJob:j1")
    assert_nil store.lock_holder("RecordJob:j2")
  end
end

describe Jiggler::LimitedJob do
  it "checks the options and computes each job's keys from its arguments" do
    options = {
      concurrency: Jiggler::LimitedJob.options(
        limit: 2, key: ->(account, *) { account }
      ),
      rate: Jiggler::LimitedJob.rate_options(limit: 50)
    }
    assert_equal(
      {
        "concurrency" => {"key" => "Export:acme", "limit" => 2, "ttl" => 900},
        "rate" => {"key" => "Export", "limit" => 50, "period" => 1}
      },
      Jiggler::LimitedJob.field("Export", ["acme", 1], options)
    )
    {
      {} => /limit must be an Integer > 0/,
      {limit: 0} => /limit must be/,
      {limit: 1, ttl: -1} => /ttl must be a number of seconds > 0/,
      {limit: 1, key: :id} => /key must be a Proc/,
      {limit: 1, per: 2} => /unknown concurrency option :per/,
      3 => /must be a Hash/
    }.each do |value, message|
      assert_match message,
        assert_raises(ArgumentError) {
          Jiggler::LimitedJob.options(value)
        }.message
    end
    assert_match(
      /rate period must be a number of seconds > 0/,
      assert_raises(ArgumentError) {
        Jiggler::LimitedJob.rate_options(limit: 5, period: 0)
      }.message
    )
  end

  it "refuses in job_options a ttl or period past a year, " \
    "naming the option and its range" do
    job = Class.new { include Jiggler::Job }
    range = "must be a number of seconds > 0 and at most 31622400 (a year)"
    {
      {unique: {ttl: 1e300}} => "unique ttl",
      {concurrency: {limit: 1, ttl: 1e300}} => "concurrency ttl",
      {rate: {limit: 1, period: 1e300}} => "rate period"
    }.each do |options, name|
      assert_equal "#{name} #{range} (got 1.0e+300)",
        assert_raises(ArgumentError) { job.job_options(**options) }.message
    end
    job.job_options(unique: {ttl: 366 * 86_400}, queue: "default")
  end

  it "reads a payload's limit as at least 1 and its seconds within a year" do
    assert_equal(
      {key: "k", limit: 1, ttl: 366 * 86_400.0},
      Jiggler::LimitedJob.slot(
        {"key" => "k", "limit" => 0, "ttl" => Float::INFINITY}
      )
    )
    assert_equal({key: "", limit: 1, ttl: 900},
      Jiggler::LimitedJob.slot({"limit" => "2", "ttl" => -1}))
    assert_equal(
      {key: "k", limit: 3, period: 1},
      Jiggler::LimitedJob.rate(
        {"key" => "k", "limit" => 3.5, "period" => Float::NAN}
      )
    )
  end
end

# frozen_string_literal: true

require "test_helper"
require "json"

describe "Jiggler.summary" do
  def payload(value)
    JSON.generate(
      {"jid" => SecureRandom.hex(12), "name" => "RecordJob", "args" => [value]}
    )
  end

  # Sends jobs straight to the retry or the dead set, as a server does when they fail.
  def fail_jobs(*places)
    failures = places.each_with_index.map do |place, n|
      Jiggler::Store::Failed.new(
        fetched: Jiggler::Store::Fetched.new(nil, "default", nil),
        set: place.to_sym,
        at: Time.now.to_f + n,
        payload: payload(n)
      )
    end
    store.fail(
      "proc-1", failures, reliable: false, dead_cutoff: 0, dead_max: 100
    )
  end

  # Acknowledges finished jobs, as a server does on its next fetch.
  def ack(count)
    store.fetch(
      "proc-1",
      [],
      limit: 0,
      acks: Array.new(count) { |n| "#{n}|default" },
      reliable: false
    )
  end

  it "has exactly the documented keys" do
    keys = %w[
      retry_jobs_count dead_jobs_count scheduled_jobs_count failures_count
      processed_count processes queues batches waiting recurring
    ]
    assert_equal keys, Jiggler.summary.keys
  end

  it "is all zeros and empty for a fresh namespace" do
    expected = {
      "retry_jobs_count" => 0,
      "dead_jobs_count" => 0,
      "scheduled_jobs_count" => 0,
      "failures_count" => 0,
      "processed_count" => 0,
      "processes" => {},
      "queues" => {},
      "batches" => {},
      "waiting" => {},
      "recurring" => {}
    }
    assert_equal expected, Jiggler.summary
  end

  it "counts jobs in each queue" do
    RecordJob.enqueue_bulk([[1], [2], [3]])
    RecordJob.with_options(queue: "mine").enqueue(4)
    assert_equal({"default" => 3, "mine" => 1}, Jiggler.summary["queues"])
  end

  it "counts the batch items waiting, by queue and class" do
    store.add_to_batch(
      "default", "DigestJob", [payload(1), payload(2)], Time.now.to_f
    )
    store.add_to_batch("mail", "DigestJob", [payload(3)], Time.now.to_f)
    assert_equal(
      {"default" => {"DigestJob" => 2}, "mail" => {"DigestJob" => 1}},
      Jiggler.summary["batches"]
    )
    assert_equal({}, Jiggler.summary["queues"])
  end

  it "shows only queues that hold jobs" do
    RecordJob.with_options(queue: "drained").enqueue_bulk([[1], [2]])
    RecordJob.enqueue(3)
    store.fetch("proc-1", ["drained"], limit: 5, reliable: false)
    assert_equal({"default" => 1}, Jiggler.summary["queues"])
  end

  it "counts scheduled jobs" do
    RecordJob.enqueue_in(60, 1)
    RecordJob.enqueue_at(Time.now + 3600, 2)
    RecordJob.enqueue_in(-1, 3)
    summary = Jiggler.summary
    assert_equal [2, {"default" => 1}],
      summary.values_at("scheduled_jobs_count", "queues")
  end

  it "counts retries, dead jobs and failures" do
    fail_jobs("retry", "retry", "dead")
    fail_jobs("dead")
    counts = Jiggler.summary.values_at(
      "retry_jobs_count", "dead_jobs_count", "failures_count"
    )
    assert_equal [2, 2, 4], counts
  end

  it "counts processed jobs" do
    ack(3)
    ack(2)
    assert_equal 5, Jiggler.summary["processed_count"]
    assert_equal 0, Jiggler.summary["failures_count"]
  end

  it "lists live processes with what they reported" do
    info = {
      "hostname" => "box",
      "pid" => 42,
      "concurrency" => 10,
      "queues" => ["default"],
      "current_jobs" => {}
    }
    store.beat("box:42:abc", JSON.generate(info), 60)
    store.beat("box:43:def", JSON.generate(info.merge("pid" => 43)), 60)
    processes = Jiggler.summary["processes"]
    assert_equal %w[box:42:abc box:43:def], processes.keys.sort
    assert_equal info, processes["box:42:abc"]
  end

  it "drops processes whose registration expired or that unregistered" do
    store.beat("gone", JSON.generate({"pid" => 1}), 0.05)
    store.beat("left", JSON.generate({"pid" => 2}), 60)
    store.beat("live", JSON.generate({"pid" => 3}), 60)
    store.unregister("left")
    wait_for(message: "the registration to expire") do
      !Jiggler.summary["processes"].key?("gone")
    end
    assert_equal ["live"], Jiggler.summary["processes"].keys
  end

  it "skips a process whose report is not a JSON object" do
    store.beat("garbled", "{not json", 60)
    store.beat("listed", "[1, 2]", 60)
    store.beat("good", JSON.generate({"pid" => 1}), 60)
    assert_equal({"good" => {"pid" => 1}}, Jiggler.summary["processes"])
  end

  it "reads only its own namespace" do
    other = Jiggler::Store::Redis.new(
      pool: redis, namespace: "#{@namespace}-other"
    )
    other.push("default", [payload(1)])
    other.beat("elsewhere", "{}", 60)
    RecordJob.with_options(queue: "mine").enqueue(1)
    assert_equal [{"mine" => 1}, {}],
      Jiggler.summary.values_at("queues", "processes")
    other.clear_all
  end

  it "shows jobs waiting for a concurrency slot by queue, " \
    "and the recurring tasks" do
    store.push(
      "default",
      [
        %({"jid":"j1","name":"RecordJob","args":[],"queue":"default"}),
        %({"jid":"j2","name":"RecordJob","args":[],"queue":"default"})
      ]
    )
    first, second = store.fetch("proc-1", ["default"], limit: 2)
    [first, second].each do |job|
      store.acquire_slot(
        "proc-1",
        job,
        key: "k",
        limit: 1,
        jid: Jiggler::Payload.load(job.payload)["jid"],
        ttl: 60,
        reliable: true
      )
    end
    store.save_recurring(
      "nightly" => %({"class":"RecordJob","schedule":"0 3 * * *"})
    )
    store.enqueue_recurring(
      "nightly",
      100,
      "mine",
      %({"jid":"j3","name":"RecordJob","args":[]}),
      now: 100.5
    )
    summary = Jiggler.summary
    assert_equal({"default" => 1}, summary["waiting"])
    assert_equal(
      {
        "nightly" => {
          "schedule" => "0 3 * * *",
          "last_run" => 100.5,
          "enabled" => true
        }
      },
      summary["recurring"]
    )
  end
end

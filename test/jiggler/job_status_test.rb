# frozen_string_literal: true

require_relative "reliability/helper"

module JobStatusTest
  class Step
    include Jiggler::Job

    def perform(*) = nil
  end

  class Limited
    include Jiggler::Job

    job_options concurrency: {limit: 1}, rate: {limit: 1, period: 60}

    def perform(*) = nil
  end
end

# Jiggler.status finds a job where it waits outside the queues and sets, on every store: for a concurrency slot, for
# its rate's budget, in a batch, and as a workflow step held for its dependencies. The store's own steps put it there.
StoreTarget.describe_each "Jiggler.status of waiting jobs" do
  include ReliabilityHelper

  def limited(key, concurrency: nil, rate: nil)
    limits = {
      "concurrency" => concurrency && {"key" => key, "limit" => 1, "ttl" => 60},
      "rate" => rate && {"key" => key, "limit" => 1, "period" => 60}
    }
    jid = SecureRandom.hex(12)
    store.push(
      "work",
      [
        Jiggler::Payload.dump(
          {
            "jid" => jid,
            "name" => "JobStatusTest::Limited",
            "args" => [],
            "queue" => "work",
            "limits" => limits.compact
          }
        )
      ]
    )
    jid
  end

  def fetch_all = store.fetch("p1", ["work"], limit: 10)

  it "finds jobs waiting for a concurrency slot, " \
    "with their key and place in line" do
    jids = Array.new(3) { limited("acct:1", concurrency: true) }
    fetch_all.each do |fetched|
      store.acquire_slot(
        "p1",
        fetched,
        key: "acct:1",
        limit: 1,
        jid: Jiggler::Payload.load(fetched.payload)["jid"],
        ttl: 60,
        reliable: true
      )
    end
    first, second, third = jids.map { |jid| Jiggler.status(jid) }
    assert_equal "unknown", first["state"],
      "it holds the slot: in flight, no process reports it"
    assert_equal(
      ["waiting", "concurrency", "acct:1", "work", "JobStatusTest::Limited", 0],
      second.values_at("state", "for", "key", "queue", "class", "position")
    )
    assert_equal 1, third["position"]
    store.release_slot("acct:1", jids.first, limit: 1, ttl: 60)
    assert_equal ["queued", 0],
      Jiggler.status(jids[1]).values_at("state", "position"),
      "a freed slot moves it to the head of its queue"
    assert_equal 0, Jiggler.status(jids[2])["position"]
  end

  it "finds a job its rate limit deferred, " \
    "apart from one scheduled by its enqueuer" do
    starts, deferred = Array.new(2) { limited("feed", rate: true) }
    results = fetch_all.map do |fetched|
      store.acquire_rate(
        "p1",
        fetched,
        key: "feed",
        limit: 1,
        period: 60,
        jid: Jiggler::Payload.load(fetched.payload)["jid"],
        reliable: true
      )
    end
    assert_equal true, results.first
    status = Jiggler.status(deferred)
    assert_equal ["waiting", "rate", "feed", "JobStatusTest::Limited"],
      status.values_at("state", "for", "key", "class")
    assert_in_delta results.last, status["at"], 0.01
    assert_equal "unknown", Jiggler.status(starts)["state"]
    later = JobStatusTest::Limited.enqueue_in(600)
    assert_equal ["scheduled", nil],
      Jiggler.status(later).values_at("state", "for")
  end

  it "finds a batch item before its batch forms" do
    jid = "b" * 24
    store.add_to_batch(
      "digests",
      "JobStatusTest::Step",
      [
        Jiggler::Payload.dump(
          {
            "jid" => jid,
            "name" => "JobStatusTest::Step",
            "args" => [1],
            "queue" => "digests"
          }
        )
      ],
      Time.now.to_f
    )
    assert_equal(
      {
        "state" => "batched",
        "batch" => "JobStatusTest::Step",
        "queue" => "digests",
        "class" => "JobStatusTest::Step"
      },
      Jiggler.status(jid)
    )
  end

  it "finds workflow steps held for their dependencies, " \
    "with how many are left, and released ones in their queue" do
    flow = Jiggler::Workflow.new
    parts = Array.new(2) { |index| flow.step(JobStatusTest::Step, index) }
    merge = flow.step(JobStatusTest::Step, after: parts)
    flow.start
    assert_equal(
      ["waiting", "dependencies", flow.id, 2, "default", "JobStatusTest::Step"],
      Jiggler.status(merge)
        .values_at("state", "for", "workflow", "dependencies", "queue", "class")
    )
    assert_equal ["queued", flow.id],
      Jiggler.status(parts.first).values_at("state", "workflow")
    fetched = store.fetch("p1", ["default"], limit: 2).find do |job|
      job.payload.include?(parts.first)
    end
    store.complete_step(
      "p1",
      fetched,
      workflow: flow.id,
      jid: parts.first,
      result: nil,
      reliable: true,
      retention: 60
    )
    assert_equal 1, Jiggler.status(merge)["dependencies"]
  end
end

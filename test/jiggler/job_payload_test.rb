# frozen_string_literal: true

require "test_helper"
require "jiggler/job_payload"

describe Jiggler::JobPayload do
  let(:now) { 1_700_000_000.0 }
  let(:payload) { Jiggler::JobPayload }

  def job(**fields)
    {
      "jid" => "abc",
      "args" => [1],
      "name" => "RecordJob",
      "queue" => "mail",
      "retries" => 3
    }.merge(fields.transform_keys(&:to_s))
  end

  def deep_frozen(hash) = hash.each_value { |value| value.freeze }.freeze

  def raised(message)
    raise message
  rescue => error
    error
  end

  describe ".job and .fields" do
    it "write jid and args first, then the fields in their stored order, " \
      "leaving nil fields out" do
      built = payload.job(
        [1],
        payload.fields(
          name: "RecordJob",
          queue: "q",
          retries: 4,
          created_at: now,
          retry_queue: nil,
          timeout: 5,
          at: now + 1,
          enqueued_at: now
        ),
        jid: "j1"
      )
      assert_equal(
        {
          "jid" => "j1",
          "args" => [1],
          "name" => "RecordJob",
          "queue" => "q",
          "retries" => 4,
          "created_at" => now,
          "timeout" => 5,
          "enqueued_at" => now,
          "at" => now + 1
        },
        built
      )
      assert_equal(
        %w[jid args name queue retries created_at timeout enqueued_at at],
        built.keys
      )
    end

    it "give each job a new 24-hex-digit jid" do
      fields = payload.fields(name: "RecordJob", queue: "q")
      jids = Array.new(2) { payload.job([], fields)["jid"] }
      assert_match(/\A\h{24}\z/, jids.first)
      refute_equal(*jids)
    end

    it "take only fields of the list, which names every field they write" do
      assert_raises(ArgumentError) do
        payload.fields(name: "RecordJob", queue: "q", retry: 3)
      end
      keywords = payload.method(:fields).parameters.map(&:last)
      assert_empty keywords - Jiggler::JobPayload::FIELDS.keys
    end

    it "changes only fields of the list, naming one it does not know" do
      error = assert_raises(ArgumentError) { payload.changed(job, retry: 3) }
      assert_match(/:retry is not a job payload field/, error.message)
    end
  end

  describe ".dump_all" do
    # The client's fast path: stored payloads keep the JSON they always had, which jobs already stored, and jiggler
    # 0.1.0's, share.
    it "writes the JSON of each job as Payload.dump writes the job's Hash, " \
      "byte for byte" do
      fields = payload.fields(
        name: "RecordJob",
        queue: "q",
        retries: 4,
        created_at: 1.5,
        retry_queue: "rq",
        enqueued_at: 1.5
      )
      dumped = payload.dump_all(%w[j1 j2], [[1], [{"a" => "é\""}]], fields)
      assert_equal '{"jid":"j1","args":[1],"name":"RecordJob","queue":"q",' \
        '"retries":4,"created_at":1.5,"retry_queue":"rq","enqueued_at":1.5}',
        dumped.first
      assert_equal(
        Jiggler::Payload.dump(payload.job([{"a" => "é\""}], fields, jid: "j2")),
        dumped.last
      )
    end
  end

  describe "changes" do
    it "return a new Hash and leave the job given as it was" do
      error = raised("boom")
      original = job(
        suspect: true, deaths_beside: 1, crashes: 1, at: now, snoozes: 1
      )
      given = deep_frozen(original.dup)
      changes = [
        payload.changed(given, queue: "other"),
        payload.enqueued(given, now),
        payload.failed(given, error, 2, now),
        payload.died(given, now),
        payload.crashed(given, alone: true),
        payload.crashed(given, alone: false),
        payload.suspected(given),
        payload.cleared(given),
        payload.progressed(given),
        payload.cancelled(given, "ops", now),
        payload.snoozed(given),
        payload.interrupted(given)
      ]
      assert_equal original, given
      changes.each { |changed| refute_same given, changed }
    end

    it "set fields, and remove those given as nil" do
      assert_equal job(queue: "other").except("retries"),
        payload.changed(job, queue: "other", retries: nil)
    end

    it "stamps a job as it goes to its queue, " \
      "without the time it was scheduled for" do
      assert_equal job(enqueued_at: now),
        payload.enqueued(job(at: now - 1), now)
    end

    it "record a failure: its attempt, the error, when it first failed, " \
      "and when it was retried after the first" do
      first = payload.failed(job, raised("boom"), 1, now)
      assert_equal [1, "RuntimeError", "boom", now, nil],
        first.values_at(
          "attempt", "error_class", "error_message", "failed_at", "retried_at"
        )
      assert_kind_of Array, first["error_backtrace"]
      second = payload.failed(first, raised("again"), 2, now + 10)
      assert_equal [2, "again", now, now + 10],
        second.values_at("attempt", "error_message", "failed_at", "retried_at")
    end

    it "pin a crash on a job held alone, with its deaths beside others; " \
      "count one more death beside others else" do
      assert_equal job(crashes: 4),
        payload.crashed(job(crashes: 1, deaths_beside: 2), alone: true)
      assert_equal job(crashes: "x", deaths_beside: 3),
        payload.crashed(job(crashes: "x", deaths_beside: 2), alone: false)
    end

    it "clear suspicion, and with progress the crashes too" do
      suspect = job(suspect: true, deaths_beside: 1, crashes: 2)
      assert_equal job(crashes: 2), payload.cleared(suspect)
      assert_equal job, payload.progressed(suspect)
      assert_equal job(suspect: true), payload.suspected(job)
    end

    it "mark a cancel and count snoozes and interruptions" do
      assert_equal({"by" => "ops", "at" => now},
        payload.cancelled(job, "ops", now)["cancelled"])
      assert_equal [1, 2],
        [
          payload.snoozed(job)["snoozes"],
          payload.snoozed(job(snoozes: 1))["snoozes"]
        ]
      assert_equal [1, 2],
        [
          payload.interrupted(job)["interruptions"],
          payload.interrupted(job(interruptions: 1))["interruptions"]
        ]
    end
  end

  it "makes the dead-set job of an unreadable payload, " \
    "keeping its text as valid UTF-8" do
    dead = payload.unreadable("{oops\xFF".b, "mail", raised("bad"), now)
    assert_equal ["(unreadable)", [], "mail", "{oops\uFFFD", 1, now],
      dead.values_at("name", "args", "queue", "raw", "attempt", "died_at")
    assert_equal dead, Jiggler::Payload.load(Jiggler::Payload.dump(dead))
  end
end

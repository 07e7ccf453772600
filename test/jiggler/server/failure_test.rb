# frozen_string_literal: true

require "test_helper"
require "jiggler/server/failure"
require "jiggler/store/fetched"

describe Jiggler::Server::Failure do
  let(:now) { 1_700_000_000.0 }

  def job(**fields)
    {
      "jid" => "abc",
      "name" => "RecordJob",
      "args" => [1],
      "queue" => "default",
      "retries" => 3
    }.merge(fields)
  end

  def raised(error = RuntimeError.new("boom"), depth: 0)
    (depth > 0) ? raised(error, depth: depth - 1) : raise(error)
  rescue => caught
    caught
  end

  let(:fetched) { Jiggler::Store::Fetched.new(1, "default", "{}") }

  def record(data, error = raised)
    Jiggler::Server::Failure.record(fetched, data, error, now)
  end

  def written(record) = Jiggler::Payload.load(record.payload)

  def delays(attempt)
    Array.new(2_000) { Jiggler::Server::Failure.delay(attempt) }
  end

  it "counts attempts, starting at 1" do
    assert_equal 1, written(record(job))["attempt"]
    assert_equal 3, written(record(job("attempt" => 2)))["attempt"]
  end

  it "sends the job to retry while it has retries left" do
    failed = record(job("retries" => 2, "attempt" => 1))
    assert_equal [fetched, :retry], [failed.fetched, failed.set]
    assert_operator failed.at, :>, now
  end

  it "allows N re-runs for retries: N, then dead" do
    data = job("retries" => 2)
    outcomes = Array.new(3) { record(data).set }
    assert_equal %i[retry retry dead], outcomes
  end

  it "sends a job with retries: 0 to dead at the first failure" do
    failed = record(job("retries" => 0))
    assert_equal [fetched, :dead, now], [failed.fetched, failed.set, failed.at]
    assert_equal now, written(failed)["died_at"]
  end

  it "allows 25 retries when the job does not say" do
    data = job.tap { |hash| hash.delete("retries") }
    assert_equal [:retry] * 25 + [:dead], Array.new(26) { record(data).set }
  end

  # README, Jobs that kill their process: "A suspect that fails with an error (it ran alone, and its process survived)
  # is no longer suspect": the payload written to the retry or dead set runs side by side again, its deaths beside
  # others forgotten, so a later death beside others does not make it a suspect at once.
  it "clears a suspect that fails with an error of its suspicion, " \
    "on its way to retry or dead" do
    [
      job("suspect" => true, "deaths_beside" => 2),
      job("suspect" => true, "deaths_beside" => 1, "retries" => 0)
    ].each do |data|
      failed = record(data)
      written = written(failed)
      refute Jiggler::JobRules.suspect?(written),
        "a suspect that failed on its way to #{failed.set} is still one"
      assert_nil written["deaths_beside"], failed.set.to_s
    end
  end

  it "records the error class and message" do
    data = written(record(job, raised(ArgumentError.new("bad value"))))
    assert_equal ["ArgumentError", "bad value"],
      data.values_at("error_class", "error_message")
  end

  it "keeps at most 20 backtrace lines" do
    error = raised(depth: 30)
    assert_operator error.backtrace.size, :>, 30
    assert_equal error.backtrace.first(20),
      written(record(job, error))["error_backtrace"]
  end

  it "records an empty backtrace for an error that was never raised" do
    assert_equal [],
      written(record(job, RuntimeError.new("built")))["error_backtrace"]
  end

  it "keeps at most 2000 characters of the message" do
    assert_equal "é" * 2_000,
      written(record(job, RuntimeError.new("é" * 5_000)))["error_message"]
  end

  it "writes the message as valid UTF-8, even from a binary string" do
    ["bad \xFF byte", "bad \xFF byte".b].each do |message|
      assert_equal "bad \uFFFD byte",
        written(record(job, RuntimeError.new(message)))["error_message"]
    end
  end

  it "sets failed_at at the first failure and keeps it, " \
    "and sets retried_at after that" do
    first = written(record(job))
    assert_equal [now, nil], first.values_at("failed_at", "retried_at")
    later = Jiggler::Server::Failure.record(fetched, first, raised, now + 30)
    assert_equal [now, now + 30],
      written(later).values_at("failed_at", "retried_at")
  end

  it "keeps the job's other fields" do
    data = written(
      record(job("args" => ["a", {"b" => 1}], "retry_queue" => "slow"))
    )
    assert_equal [["a", {"b" => 1}], "slow", "abc"],
      data.values_at("args", "retry_queue", "jid")
  end

  it "waits 15 to 24 seconds before the first retry" do
    scores = Array.new(2_000) { record(job).at - now }
    assert_equal [15, 24], scores.minmax.map(&:round)
  end

  it "grows the delay as count**4 + 15 + rand(10 * (count + 1)), " \
    "count = attempt - 1" do
    [1, 2, 3, 5, 10, 25].each do |attempt|
      count = attempt - 1
      low = count**4 + 15
      assert_equal [low, low + 10 * (count + 1) - 1],
        delays(attempt).minmax,
        "attempt #{attempt}"
    end
  end

  it "keeps the delay finite whatever the attempt count, " \
    "so the retry is due one day" do
    longest = 99**4 + 15 + 10 * 100 - 1
    [100, 101, 10**6, 10**400].each do |attempt|
      assert_operator delays(attempt).max, :<=, longest, "attempt #{attempt}"
    end
    failed = record(job("retries" => 10**401, "attempt" => 10**400))
    assert_equal :retry, failed.set
    assert_predicate failed.at, :finite?
  end

  it "jitters delays so that jobs failing together come back apart" do
    assert_operator delays(3).uniq.size, :>, 20
  end

  describe ".malformed" do
    def taken(payload) = Jiggler::Store::Fetched.new(4, "mail", payload)

    it "sends the job to dead at once and keeps the raw payload" do
      failed = Jiggler::Server::Failure.malformed(taken("{oops"), raised, now)
      assert_equal [4, :dead, now],
        [failed.fetched.handle, failed.set, failed.at]
      data = Jiggler::Payload.load(failed.payload)
      assert_equal ["{oops", "mail", "RuntimeError", 1],
        data.values_at("raw", "queue", "error_class", "attempt")
    end

    it "writes valid UTF-8 JSON even for binary garbage" do
      payload = Jiggler::Server::Failure
        .malformed(taken("\xFF\xFE{".b), raised, now)
        .payload
      assert payload.dup.force_encoding(Encoding::UTF_8).valid_encoding?,
        "the dead payload is not valid UTF-8"
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "json"
require "async"

module JobTest
  class MailerJob
    include Jiggler::Job

    job_options queue: "mailers", retries: 3, retry_queue: "mailer_retries"

    def perform(address) = address
  end

  class UrgentMailerJob < MailerJob
    job_options queue: "urgent"
  end

  class LateMailerJob < UrgentMailerJob
  end
end

describe Jiggler::Job do
  def jobs(queue = "default")
    store.queue_entries(queue).map { |json| JSON.parse(json) }
  end

  def scheduled
    store.set_entries(:scheduled)
      .map { |json, score| [JSON.parse(json), score] }
  end

  def assert_nothing_written
    assert_empty Jiggler.summary["queues"]
    assert_equal 0, Jiggler.summary["scheduled_jobs_count"]
  end

  describe ".enqueue" do
    it "returns a 24-hex job id and puts the job in the default queue" do
      jid = RecordJob.enqueue(1, "two", {"three" => [3.0]})
      assert_match(/\A\h{24}\z/, jid)
      job = jobs.fetch(0)
      assert_equal({
        "jid" => jid,
        "name" => "RecordJob",
        "args" => [1, "two", {"three" => [3.0]}]
      }, job.slice("jid", "name", "args"))
      assert_equal ["default", 25], job.values_at("queue", "retries")
      assert_in_delta Time.now.to_f, job["enqueued_at"], 5
    end

    it "gives every job a new id and keeps first-in first-out order" do
      ids = Array.new(5) { |n| RecordJob.enqueue(n) }
      assert_equal 5, ids.uniq.size
      assert_equal ids, jobs.map { |job| job["jid"] }
      assert_equal [[0], [1], [2], [3], [4]], jobs.map { |job| job["args"] }
    end

    it "enqueues with no arguments" do
      RecordJob.enqueue
      assert_equal [[]], jobs.map { |job| job["args"] }
    end

    it "uses the class's job_options" do
      JobTest::MailerJob.enqueue("a@example.com")
      job = jobs("mailers").fetch(0)
      assert_equal ["mailers", 3, "mailer_retries"],
        job.values_at("queue", "retries", "retry_queue")
      assert_empty jobs("default")
    end

    it "shows the queue in the summary" do
      2.times { RecordJob.enqueue(1) }
      JobTest::MailerJob.enqueue("x")
      assert_equal({"default" => 2, "mailers" => 1}, Jiggler.summary["queues"])
    end
  end

  describe ".enqueue_bulk" do
    it "returns the ids in order and writes one payload per argument list" do
      ids = RecordJob.enqueue_bulk([[1], [2], ["three", {"x" => nil}]])
      assert_equal 3, ids.size
      assert(ids.all? { |jid| jid.match?(/\A\h{24}\z/) })
      assert_equal ids, jobs.map { |job| job["jid"] }
      assert_equal [[1], [2], ["three", {"x" => nil}]],
        jobs.map { |job| job["args"] }
    end

    it "writes large batches" do
      ids = RecordJob.enqueue_bulk((1..2500).zip)
      assert_equal 2500, ids.uniq.size
      assert_equal 2500, Jiggler.summary["queues"]["default"]
      assert_equal [[1], [2]], store.queue_entries("default", limit: 2)
        .map { |json| JSON.parse(json)["args"] }
    end

    it "returns no ids and writes nothing for an empty list" do
      assert_equal [], RecordJob.enqueue_bulk([])
      assert_nothing_written
    end

    it "refuses a list that is not an Array of Arrays" do
      [nil, [1, 2], {"a" => [1]}, [[1], 2]].each do |list|
        assert_raises(ArgumentError, list.inspect) do
          RecordJob.enqueue_bulk(list)
        end
      end
      assert_nothing_written
    end
  end

  describe ".enqueue_in and .enqueue_at" do
    it "puts a job in the scheduled set, scored by when it is due" do
      jid = RecordJob.enqueue_in(100, 1, 2)
      job, score = scheduled.fetch(0)
      assert_equal [jid, [1, 2], "default"],
        job.values_at("jid", "args", "queue")
      assert_in_delta Time.now.to_f + 100, score, 5
      assert_nil job["enqueued_at"]
      assert_empty jobs
    end

    it "schedules at a Time or at epoch seconds" do
      at = Time.now + 3600
      RecordJob.enqueue_at(at, "time")
      RecordJob.enqueue_at(at.to_i + 60, "epoch")
      assert_equal [[["time"], at.to_f], [["epoch"], at.to_i + 60.0]],
        scheduled.map { |job, score| [job["args"], score] }
    end

    it "pushes at once when the time has passed" do
      RecordJob.enqueue_in(-10, "past")
      RecordJob.enqueue_at(Time.now - 60, "earlier")
      RecordJob.enqueue_in(0, "now")
      assert_equal [["past"], ["earlier"], ["now"]],
        jobs.map { |job| job["args"] }
      assert_equal 0, Jiggler.summary["scheduled_jobs_count"]
    end

    it "refuses a delay or a time that is not a finite number" do
      [nil, "10", Float::INFINITY, Float::NAN].each do |bad|
        assert_raises(ArgumentError) { RecordJob.enqueue_in(bad, 1) }
        assert_raises(ArgumentError) { RecordJob.enqueue_at(bad, 1) }
      end
      assert_raises(ArgumentError) { RecordJob.enqueue_at("2030-01-01", 1) }
      assert_nothing_written
    end
  end

  describe ".with_options" do
    it "overrides the class's options for one call" do
      JobTest::MailerJob.with_options(queue: "default").enqueue("x")
      JobTest::MailerJob.enqueue("y")
      assert_equal [["x"]], jobs.map { |job| job["args"] }
      assert_equal [["y"]], jobs("mailers").map { |job| job["args"] }
      assert_equal "mailers", JobTest::MailerJob.job_options[:queue]
    end

    it "is chainable, later options winning" do
      enqueuer = RecordJob.with_options(queue: "a", retries: 1)
        .with_options(retries: 4, retry_queue: :b)
      enqueuer.with_options(queue: :c).enqueue(1)
      job = jobs("c").fetch(0)
      assert_equal ["c", 4, "b"],
        job.values_at("queue", "retries", "retry_queue")
      assert_equal({queue: "a", retries: 4, retry_queue: "b"}, enqueuer.options)
    end

    it "is honoured by enqueue_bulk" do
      RecordJob.with_options(queue: "bulk", retries: 0).enqueue_bulk([[1], [2]])
      assert_equal [["bulk", 0]] * 2,
        jobs("bulk").map { |job| job.values_at("queue", "retries") }
      assert_empty jobs
    end

    it "is honoured by enqueue_in and enqueue_at" do
      RecordJob.with_options(queue: "later", retries: 2).enqueue_in(60, 1)
      RecordJob.with_options(queue: "later", retry_queue: "r")
        .enqueue_at(Time.now + 60, 2)
      options = scheduled.map do |job, _|
        job.values_at("queue", "retries", "retry_queue")
      end
      assert_equal [["later", 2, nil], ["later", 25, "r"]], options
    end

    it "sends a past enqueue_at to the overridden queue" do
      JobTest::MailerJob.with_options(queue: "now")
        .enqueue_at(Time.now - 1, "x")
      assert_equal [["x"]], jobs("now").map { |job| job["args"] }
      assert_empty jobs("mailers")
    end

    it "checks its options" do
      assert_raises(ArgumentError) { RecordJob.with_options(queu: "x") }
      assert_raises(ArgumentError) { RecordJob.with_options(retries: -1) }
      assert_raises(ArgumentError) do
        RecordJob.with_options(queue: "a b").enqueue(1)
      end
      assert_raises(ArgumentError) do
        RecordJob.with_options(queue: "ok").with_options(queue: nil)
      end
      assert_nothing_written
    end
  end

  describe ".job_options" do
    def job_class = Class.new { include Jiggler::Job }

    it "defaults to the default queue, 25 retries and no retry queue" do
      assert_equal(
        {queue: "default", retries: 25, retry_queue: nil},
        job_class.job_options
      )
    end

    it "refuses unknown options, naming them" do
      error = assert_raises(ArgumentError) do
        job_class.job_options(queue: "a", retry: 3)
      end
      assert_includes error.message, ":retry"
      assert_includes error.message, "retries"
    end

    it "refuses retries that are not an Integer >= 0" do
      klass = job_class
      [-1, 1.5, "3", nil, true].each do |bad|
        error = assert_raises(ArgumentError, bad.inspect) do
          klass.job_options(retries: bad)
        end
        assert_includes error.message, "retries"
      end
      assert_equal 25, klass.job_options[:retries]
    end

    it "refuses bad queue and retry_queue names" do
      klass = job_class
      ["", "a b", "a|b", "{a}", nil, 1, ["a"]].each do |bad|
        assert_raises(ArgumentError, bad.inspect) do
          klass.job_options(queue: bad)
        end
      end
      ["", "x y", 5].each do |bad|
        assert_raises(ArgumentError, bad.inspect) do
          klass.job_options(retry_queue: bad)
        end
      end
      assert_equal(
        {queue: "default", retries: 25, retry_queue: nil},
        klass.job_options
      )
    end

    it "takes queue names by one grammar: printable UTF-8, no whitespace " \
      "or control characters, at most 128" do
      klass = job_class
      [
        "a?b", "..", ".", "%", "/", "a/b", "ü-队列", "a" * 128, "#x", "a+b"
      ].each do |name|
        klass.job_options(queue: name, retry_queue: name)
        assert_equal name, klass.with_options(queue: name).options[:queue]
      end
      bad = [
        "a\tb", "a\nb", "\u0000", "a\u00A0b", "\u2028", "a" * 129, "caf\xC3",
        "\xFF".b, "x\u007F"
      ]
      bad.each do |name|
        [:queue, :retry_queue].each do |option|
          error = assert_raises(ArgumentError, name.inspect) do
            klass.job_options(option => name)
          end
          assert_match(
            /\A#{option} must be a queue name: 1 to 128 printable characters of valid UTF-8/,
            error.message
          )
          assert_raises(ArgumentError, name.inspect) do
            klass.with_options(option => name)
          end
        end
      end
    end

    it "accepts Symbol queue names as Strings and merges calls" do
      klass = job_class
      klass.job_options(queue: :critical)
      klass.job_options(retries: 0)
      assert_equal(
        {queue: "critical", retries: 0, retry_queue: nil},
        klass.job_options
      )
    end

    it "is inherited by subclasses, which may override some" do
      assert_equal(
        {queue: "urgent", retries: 3, retry_queue: "mailer_retries"},
        JobTest::UrgentMailerJob.job_options
      )
      assert_equal JobTest::UrgentMailerJob.job_options,
        JobTest::LateMailerJob.job_options
      assert_equal "mailers", JobTest::MailerJob.job_options[:queue]
      JobTest::LateMailerJob.enqueue("late")
      assert_equal [["JobTest::LateMailerJob", 3]],
        jobs("urgent").map { |job| job.values_at("name", "retries") }
    end
  end

  describe "batch and result options" do
    def batch_class(**options)
      Class.new do
        include Jiggler::Job

        job_options(**options)

        def perform_batch(args_list) = args_list
      end
    end

    it "takes batch_size with a default batch_interval of 1 s, " \
      "and result_ttl" do
      assert_equal(
        {batch_size: 50, batch_interval: 1.0},
        batch_class(batch_size: 50).job_options
          .slice(:batch_size, :batch_interval)
      )
      assert_equal 0.25,
        batch_class(batch_size: 5, batch_interval: 0.25)
          .job_options[:batch_interval]
      assert_equal 30, batch_class(result_ttl: 30).job_options[:result_ttl]
    end

    it "refuses bad values, naming the option and what it takes" do
      [0, -1, 10_001, 2.5, "10", nil].each do |bad|
        error = assert_raises(ArgumentError, bad.inspect) do
          batch_class(batch_size: bad)
        end
        assert_includes error.message,
          "batch_size must be an Integer from 1 to 10000"
      end
      [0, -1, Float::INFINITY, "1", nil].each do |bad|
        assert_raises(ArgumentError, bad.inspect) do
          batch_class(batch_size: 5, batch_interval: bad)
        end
        assert_includes(
          assert_raises(ArgumentError) { batch_class(result_ttl: bad) }.message,
          "result_ttl must be a number of seconds > 0"
        )
      end
      assert_includes(
        assert_raises(ArgumentError) { batch_class(batch_interval: 1) }.message,
        "batch_interval needs batch_size"
      )
    end

    it "belongs to the class: with_options refuses it" do
      error = assert_raises(ArgumentError) do
        batch_class(batch_size: 5).with_options(batch_size: 10)
      end
      assert_includes error.message,
        "batch_size can only be set with job_options"
      assert_raises(ArgumentError) do
        JobTest::MailerJob.with_options(queue: "x").with_options(result_ttl: 5)
      end
    end

    it "needs perform_batch for a batch class, at enqueue" do
      klass = Class.new do
        include Jiggler::Job

        job_options batch_size: 5

        def perform(x) = x
      end
      unless defined?(JobTest::NoPerformBatch)
        JobTest.const_set(:NoPerformBatch, klass)
      end
      error = assert_raises(ArgumentError) do
        JobTest::NoPerformBatch.enqueue(1)
      end
      assert_includes error.message, "needs a perform_batch(args_list) method"
    end

    it "notes the shortest batch_interval of the batch classes loaded" do
      batch_class(batch_size: 5, batch_interval: 0.05)
      assert_operator Jiggler::Job.shortest_batch_interval, :<=, 0.05
    end
  end

  describe "refused arguments" do
    it "raise ArgumentError naming the argument and write nothing" do
      error = assert_raises(ArgumentError) do
        RecordJob.enqueue(1, "ok", :symbol)
      end
      assert_includes error.message, "RecordJob"
      assert_includes error.message, "argument 3"
      assert_nothing_written
    end

    it "write nothing from enqueue_bulk when only the last list is bad" do
      error = assert_raises(ArgumentError) do
        RecordJob.enqueue_bulk([[1], [2], [3, Time.now]])
      end
      assert_includes error.message, "argument 2"
      assert_nothing_written
    end

    it "refuse arguments nested deeper than NESTING_LIMIT, " \
      "inside a fiber too, and write nothing" do
      deep = (0..Jiggler::Payload::NESTING_LIMIT)
        .reduce(1) { |inner, _| [inner] }
      Sync do
        error = assert_raises(ArgumentError) do
          RecordJob.enqueue_bulk([[1], [{"tree" => deep}]])
        end
        assert_includes error.message, "RecordJob argument 1 in argument list 2"
        assert_includes error.message, "NESTING_LIMIT"
      end
      assert_nothing_written
    end

    it "accept Hash and String subclasses as the values they are" do
      indifferent = Class.new(Hash).new.merge!("to" => "a@example.com")
      safe = Class.new(String).new("<b>hi</b>")
      RecordJob.enqueue(indifferent, safe)
      assert_equal [{"to" => "a@example.com"}, "<b>hi</b>"], jobs.first["args"]
    end

    it "write nothing to the scheduled set" do
      assert_raises(ArgumentError) { RecordJob.enqueue_in(60, Object.new) }
      assert_raises(ArgumentError) do
        RecordJob.enqueue_at(Time.now + 60, {sym: 1})
      end
      assert_raises(ArgumentError) do
        RecordJob.with_options(queue: "x").enqueue_in(60, Float::NAN)
      end
      assert_nothing_written
    end
  end

  it "refuses an anonymous class, writing nothing" do
    klass = Class.new { include Jiggler::Job }
    [
      -> { klass.enqueue(1) },
      -> { klass.enqueue_bulk([[1]]) },
      -> { klass.enqueue_in(5, 1) }
    ].each do |call|
      error = assert_raises(ArgumentError, &call)
      assert_match(/anonymous/, error.message)
    end
    assert_nothing_written
  end

  it "gives jobs the id and the logger" do
    job = RecordJob.new
    job.jid = "abc"
    assert_equal "abc", job.jid
    assert_same Jiggler.logger, job.logger
  end
end

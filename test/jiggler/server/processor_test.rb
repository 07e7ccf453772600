# frozen_string_literal: true

require "test_helper"
require "async"
require "jiggler/server/processor"
require "jiggler/store/fetched"
require "fixtures/batch_jobs" # BatchJobs::Opaque

# Jobs for the processor tests; each run is recorded in RUNS.
module ProcessorTest
  RUNS = []

  class Recorder
    include Jiggler::Job

    def perform(*args) = RUNS << [jid, args]
  end

  class TwoArgs
    include Jiggler::Job

    def perform(first, second = nil) = RUNS << [first, second]
  end

  class Failing
    include Jiggler::Job

    def perform(error_class)
      raise(Object.const_get(error_class), "failed on purpose")
    end
  end

  class Batched
    include Jiggler::Job

    job_options batch_size: 10, result_ttl: 60

    def perform_batch(args_list)
      RUNS << [jid, args_list]
      args_list.sum(&:first)
    end
  end

  class Doubled
    include Jiggler::Job

    job_options result_ttl: 60, retries: 0

    def perform(number)
      (number == 0) ? raise(ArgumentError, "zero") : number * 2
    end
  end

  # A wrapper class (as Active Job's is): it gets the whole payload, and its options are the job's.
  class ResultWrapper
    include Jiggler::Job

    job_options result_ttl: 60

    def self.jiggler_wrapper? = true

    def perform(job)
      (job["args"] == [0]) ? raise(ArgumentError, "zero") : job["args"].first
    end
  end

  # A job may raise anything.
  class Fatal < Exception; end # rubocop:disable Lint/InheritException
end

describe Jiggler::Server::Processor do
  before { ProcessorTest::RUNS.clear }

  let(:processor) do
    Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Logger.new(File::NULL),
      results: store
    )
  end

  def payload(name, args, **extra)
    Jiggler::Payload.dump({
      "jid" => "jid-1",
      "name" => name,
      "args" => args,
      "queue" => "default",
      "retries" => 3
    }.merge(extra))
  end

  def run_job(json)
    processor.call(Jiggler::Store::Fetched.new(1, "default", json))
  end

  def run_failing(name, args, **extra)
    record = run_job(payload(name, args, **extra))
    refute_nil record, "expected #{name} to fail"
    [record, Jiggler::Payload.load(record.payload)]
  end

  it "runs the job with its arguments and returns nil" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("ProcessorTest::Recorder", [1, "two", {"three" => [3]}]))
    assert_equal [["jid-1", [1, "two", {"three" => [3]}]]], ProcessorTest::RUNS
  end

  it "runs jobs with optional arguments left out" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("ProcessorTest::TwoArgs", ["a"]))
    assert_equal [["a", nil]], ProcessorTest::RUNS
  end

  it "records a StandardError for a retry" do
    record, job = run_failing("ProcessorTest::Failing", ["ArgumentError"])
    assert_equal [1, :retry], [record.fetched.handle, record.set]
    assert_equal ["ArgumentError", "failed on purpose", 1],
      job.values_at("error_class", "error_message", "attempt")
  end

  it "records errors that are not StandardErrors" do
    %w[NotImplementedError ProcessorTest::Fatal].each do |error_class|
      _, job = run_failing("ProcessorTest::Failing", [error_class])
      assert_equal error_class, job["error_class"]
    end
  end

  it "sends a failing job with retries: 0 to dead" do
    record, _ = run_failing(
      "ProcessorTest::Failing",
      ["RuntimeError"],
      "retries" => 0
    )
    assert_equal :dead, record.set
  end

  it "records an unknown class" do
    _, job = run_failing("ProcessorTest::Missing", [])
    assert_equal "Jiggler::UnknownJobError", job["error_class"]
    assert_includes job["error_message"], "unknown job class"
  end

  it "records a class that is not a Jiggler::Job, without running it" do
    _, job = run_failing("PlainClass", [])
    assert_includes job["error_message"], "PlainClass is not a Jiggler::Job"
    assert_empty recorded
  end

  it "records a wrong number of arguments, saying what was given " \
    "and expected" do
    _, job = run_failing("ProcessorTest::TwoArgs", [1, 2, 3])
    assert_equal "Jiggler::Server::Processor::ArityError", job["error_class"]
    assert_match(/given 3, expected 1\.\.2/, job["error_message"])
  end

  it "still runs a class after a wrong call to it" do
    run_failing("ProcessorTest::TwoArgs", [])
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("ProcessorTest::TwoArgs", [1, 2]))
  end

  it "sends a malformed payload to dead at once, keeping it" do
    record = run_job("{not json")
    assert_equal [1, :dead], [record.fetched.handle, record.set]
    job = Jiggler::Payload.load(record.payload)
    assert_equal ["{not json", "Jiggler::Payload::MalformedError"],
      job.values_at("raw", "error_class")
  end

  it "runs a batch with perform_batch and keeps its result under " \
    "every item's id" do
    batch = payload(
      "ProcessorTest::Batched",
      [[1], [2], [3]],
      "jids" => %w[item-a item-b item-c]
    )
    assert_equal Jiggler::Server::Processor::DONE, run_job(batch)
    assert_equal [["jid-1", [[1], [2], [3]]]], ProcessorTest::RUNS
    assert_equal [6, 6, 6],
      %w[item-a item-b item-c].map { |jid| Jiggler.result(jid, timeout: 1) }
  end

  it "runs an item of a batch class that arrives alone as a batch of one" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("ProcessorTest::Batched", [4]))
    assert_equal [["jid-1", [[4]]]], ProcessorTest::RUNS
  end

  it "refuses a batch for a class without batch_size" do
    _, job = run_failing(
      "ProcessorTest::Recorder",
      [[1], [2]],
      "jids" => %w[a b]
    )
    assert_equal "Jiggler::Server::Processor::ArityError", job["error_class"]
    assert_includes job["error_message"],
      "got a batch of 2 items but does not set batch_size"
  end

  it "keeps a result, the error of a job that died, and an error " \
    "for a value that is not JSON" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("ProcessorTest::Doubled", [21], "jid" => "doubled"))
    assert_equal 42, Jiggler.result("doubled", timeout: 1)
    record = run_job(
      payload("ProcessorTest::Doubled", [0], "jid" => "zero", "retries" => 0)
    )
    assert_equal :dead, record.set
    error = assert_raises(Jiggler::JobFailed) do
      Jiggler.result("zero", timeout: 1)
    end
    assert_equal ["ArgumentError", "zero"],
      [error.error_class, error.message[/zero\z/]]
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(payload("BatchJobs::Opaque", [], "jid" => "opaque"))
    assert_match(
      /not JSON-native/,
      assert_raises(Jiggler::JobFailed) do
        Jiggler.result("opaque", timeout: 1)
      end.message
    )
  end

  it "keeps the result and the error of a job run through a wrapper class, " \
    "by the wrapper's result_ttl" do
    assert_equal Jiggler::Server::Processor::DONE,
      run_job(
        payload(
          "WrappedJob",
          [7],
          "jid" => "wrapped",
          "wrapper" => "ProcessorTest::ResultWrapper"
        )
      )
    assert_equal 7, Jiggler.result("wrapped", timeout: 1)
    record = run_job(
      payload(
        "WrappedJob",
        [0],
        "jid" => "wrapped-zero",
        "wrapper" => "ProcessorTest::ResultWrapper",
        "retries" => 0
      )
    )
    assert_equal :dead, record.set
    assert_raises(Jiggler::JobFailed) do
      Jiggler.result("wrapped-zero", timeout: 1)
    end
  end

  it "keeps no result for a job that will be retried" do
    run_failing(
      "ProcessorTest::Doubled",
      [0],
      "jid" => "retried",
      "retries" => 3
    )
    assert_raises(Jiggler::TimeoutError) do
      Jiggler.result("retried", timeout: 0.05)
    end
  end

  it "sends JSON that is not a job to dead" do
    assert_equal :dead, run_job("[1, 2]").set
    assert_equal :dead,
      run_job('{"name": "ProcessorTest::Recorder", "args": 1, "jid": "x"}').set
    assert_empty ProcessorTest::RUNS
  end
end

# frozen_string_literal: true

require "test_helper"
require "jiggler/testing"
require "jiggler/testing/assertions"

Jiggler::Testing.disable! # the rest of the suite runs on the real store; these tests switch per test

module TestingTest
  RUNS = []

  class Invoice
    include Jiggler::Job

    job_options queue: "billing"

    def perform(id, options = {}) = RUNS << [:invoice, id, options]
  end

  class Chain
    include Jiggler::Job

    def perform(left)
      RUNS << [:chain, left]
      Chain.enqueue(left - 1) if left > 1
      Invoice.enqueue(left) if left == 1
    end
  end

  # A client and server middleware: tags the job, then reports the tag when it runs.
  class Tag
    def call(*args)
      job = args[-2]
      (args.size == 3) ? RUNS << [:server, job["tag"]] : job["tag"] = "tagged"
      yield
    end
  end

  class Digest
    include Jiggler::Job

    job_options batch_size: 2

    def perform_batch(args_list) = RUNS << [:digest, args_list]
  end
end

describe Jiggler::Testing do
  include Jiggler::Testing::Assertions

  before do
    TestingTest::RUNS.clear
    Jiggler::Testing.clear_all
    Jiggler::Testing.fake!
  end

  after { Jiggler::Testing.disable! }

  it "keeps enqueued jobs in memory per class, with their queue and time, and writes nothing" do
    jid = TestingTest::Invoice.enqueue(1, "copy" => true)
    TestingTest::Invoice.with_options(queue: "late").enqueue_in(3600, 2)
    now, later = TestingTest::Invoice.jobs
    assert_equal [jid, [1, {"copy" => true}], "billing", nil], now.values_at("jid", "args", "queue", "at")
    assert_equal [[2], "late"], later.values_at("args", "queue")
    assert_in_delta Time.now.to_f + 3600, later["at"], 1
    assert_empty store.queue_entries("billing")
    assert_empty TestingTest::RUNS
  end

  it "checks arguments as a real enqueue does" do
    error = assert_raises(ArgumentError) { TestingTest::Invoice.enqueue(Time.now) }
    assert_match(/not JSON-native/, error.message)
    assert_empty TestingTest::Invoice.jobs
  end

  it "drains a class, and drain_all runs every job and those they enqueue" do
    TestingTest::Invoice.enqueue(7)
    assert_equal 1, TestingTest::Invoice.drain
    TestingTest::Chain.enqueue(3)
    assert_equal 4, Jiggler::Testing.drain_all
    assert_equal [[:invoice, 7, {}], [:chain, 3], [:chain, 2], [:chain, 1], [:invoice, 1, {}]], TestingTest::RUNS
    assert_empty Jiggler::Testing.jobs
  end

  it "performs a batch class's items together, batch_size at a time" do
    TestingTest::Digest.enqueue_bulk([[1], [2], [3]])
    assert_equal 3, TestingTest::Digest.drain
    assert_equal [[:digest, [[1], [2]]], [:digest, [[3]]]], TestingTest::RUNS
  end

  it "runs the client middleware at enqueue and the server middleware when draining" do
    Jiggler.configure do |config|
      config.client_middleware { |chain| chain.add(TestingTest::Tag) }
      config.server_middleware { |chain| chain.add(TestingTest::Tag) }
    end
    TestingTest::Invoice.enqueue(1)
    assert_equal "tagged", TestingTest::Invoice.jobs.first["tag"]
    TestingTest::Invoice.drain
    assert_equal [[:server, "tagged"], [:invoice, 1, {}]], TestingTest::RUNS
  end

  it "clears one class or all" do
    TestingTest::Invoice.enqueue(1)
    TestingTest::Chain.enqueue(1)
    TestingTest::Invoice.clear
    assert_equal 1, Jiggler::Testing.jobs.size
    Jiggler::Testing.clear_all
    assert_empty Jiggler::Testing.jobs
  end

  it "runs jobs at enqueue in inline mode, with arguments as a server would read them" do
    Jiggler::Testing.inline! { TestingTest::Invoice.enqueue(1, "at" => 1.5) }
    assert_equal [[:invoice, 1, {"at" => 1.5}]], TestingTest::RUNS
    assert Jiggler::Testing.fake?, "the block's mode ends with the block"
  end

  it "writes to the real store when disabled, for a block" do
    Jiggler::Testing.disable! { TestingTest::Invoice.enqueue(5) }
    assert_equal [[5]], store.queue_entries("billing").map { |json| Jiggler::Payload.load(json)["args"] }
    assert_empty TestingTest::Invoice.jobs
  end

  it "asserts what was enqueued: class, arguments, queue and time" do
    at = Time.now + 600
    TestingTest::Invoice.enqueue_at(at, 3)
    assert_enqueued_jiggler_job TestingTest::Invoice
    assert_enqueued_jiggler_job TestingTest::Invoice, args: [3], queue: "billing", at: at, count: 1
    refute_enqueued_jiggler_job TestingTest::Invoice, args: [4]
    error = assert_raises(Minitest::Assertion) { assert_enqueued_jiggler_job TestingTest::Invoice, queue: "other" }
    assert_match(/expected at least one of a TestingTest::Invoice job on queue "other", found 0: .*\[3\] on "billing"/, error.message)
  end
end

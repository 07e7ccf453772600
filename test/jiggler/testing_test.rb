# frozen_string_literal: true

require "test_helper"
require "jiggler/testing"
require "jiggler/testing/assertions"

# the rest of the suite runs on the real store; these tests switch per test
Jiggler::Testing.disable!

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

  # Workflow steps: parts return a value, a merge adds up its dependencies' values.
  class Part
    include Jiggler::Job

    def perform(part)
      RUNS << [:part, part]
      part * 10
    end
  end

  class Merge
    include Jiggler::Job

    job_options queue: "merges"

    def perform = RUNS << [:merge, dependency_results.values.sum]
  end

  class Notify
    include Jiggler::Job

    def perform(message) = RUNS << [:notify, message]
  end

  # An on_complete callback: records its group's steps by state.
  class Outcome
    include Jiggler::Job

    def perform = RUNS << [:outcome, workflow_outcome.values.tally]
  end

  class Broken
    include Jiggler::Job

    def perform = raise("broken step")
  end

  # What `flow` runs, in order, once every step has run.
  FLOW_RUNS = [
    [:part, 1], [:part, 2], [:part, 3], [:merge, 60],
    [:notify, "report"], [:notify, "done"]
  ].freeze

  # parts (1, 2, 3) -> merge -> "report"; on_success "done".
  def self.flow
    flow = Jiggler::Workflow.new
    parts = [1, 2, 3].map { |part| flow.step(Part, part) }
    merge = flow.step(Merge, after: parts)
    flow.step(Notify, "report", after: merge)
    flow.on_success(Notify, "done")
    [flow, parts, merge]
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

  it "keeps enqueued jobs in memory per class, with their queue and time, " \
    "and writes nothing" do
    jid = TestingTest::Invoice.enqueue(1, "copy" => true)
    TestingTest::Invoice.with_options(queue: "late").enqueue_in(3600, 2)
    now, later = TestingTest::Invoice.jobs
    assert_equal [jid, [1, {"copy" => true}], "billing", nil],
      now.values_at("jid", "args", "queue", "at")
    assert_equal [[2], "late"], later.values_at("args", "queue")
    assert_in_delta Time.now.to_f + 3600, later["at"], 1
    assert_empty store.queue_entries("billing")
    assert_empty TestingTest::RUNS
  end

  it "checks arguments as a real enqueue does" do
    error = assert_raises(ArgumentError) do
      TestingTest::Invoice.enqueue(Time.now)
    end
    assert_match(/not JSON-native/, error.message)
    assert_empty TestingTest::Invoice.jobs
  end

  it "drains a class, and drain_all runs every job and those they enqueue" do
    TestingTest::Invoice.enqueue(7)
    assert_equal 1, TestingTest::Invoice.drain
    TestingTest::Chain.enqueue(3)
    assert_equal 4, Jiggler::Testing.drain_all
    assert_equal(
      [
        [:invoice, 7, {}],
        [:chain, 3],
        [:chain, 2],
        [:chain, 1],
        [:invoice, 1, {}]
      ],
      TestingTest::RUNS
    )
    assert_empty Jiggler::Testing.jobs
  end

  it "performs a batch class's items together, batch_size at a time" do
    TestingTest::Digest.enqueue_bulk([[1], [2], [3]])
    assert_equal 3, TestingTest::Digest.drain
    assert_equal [[:digest, [[1], [2]]], [:digest, [[3]]]], TestingTest::RUNS
  end

  it "runs the client middleware at enqueue " \
    "and the server middleware when draining" do
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

  it "runs jobs at enqueue in inline mode, " \
    "with arguments as a server would read them" do
    Jiggler::Testing.inline! { TestingTest::Invoice.enqueue(1, "at" => 1.5) }
    assert_equal [[:invoice, 1, {"at" => 1.5}]], TestingTest::RUNS
    assert Jiggler::Testing.fake?, "the block's mode ends with the block"
  end

  it "writes to the real store when disabled, for a block" do
    Jiggler::Testing.disable! { TestingTest::Invoice.enqueue(5) }
    assert_equal [[5]],
      store.queue_entries("billing").map { |json|
        Jiggler::Payload.load(json)["args"]
      }
    assert_empty TestingTest::Invoice.jobs
  end

  it "asserts what was enqueued: class, arguments, queue and time" do
    at = Time.now + 600
    TestingTest::Invoice.enqueue_at(at, 3)
    assert_enqueued_jiggler_job TestingTest::Invoice
    assert_enqueued_jiggler_job TestingTest::Invoice,
      args: [3], queue: "billing", at: at, count: 1
    refute_enqueued_jiggler_job TestingTest::Invoice, args: [4]
    error = assert_raises(Minitest::Assertion) do
      assert_enqueued_jiggler_job TestingTest::Invoice, queue: "other"
    end
    assert_match(
      /expected at least one of a TestingTest::Invoice job on queue "other", found 0: .*\[3\] on "billing"/,
      error.message
    )
  end

  it "keeps a started workflow's steps without dependencies as enqueued " \
    "jobs, holds the others, and writes nothing" do
    flow, parts, merge = TestingTest.flow
    flow.start
    assert_equal parts, TestingTest::Part.jobs.map { |job| job["jid"] }
    assert_equal [[flow.id], [[1], [2], [3]]],
      [
        TestingTest::Part.jobs.map { |job| job["workflow"] }.uniq,
        TestingTest::Part.jobs.map { |job| job["args"] }
      ]
    assert_empty TestingTest::Merge.jobs
    assert_equal "waiting", Jiggler::Testing.workflow_steps(flow.id)[merge]
    assert_enqueued_jiggler_job TestingTest::Part, args: [2]
    assert_empty store.queue_sizes
    assert_empty store.workflow_steps(flow.id)
  end

  it "releases a step when a drain performed its last dependency: " \
    "drain_all runs the workflow in dependency order" do
    flow, parts, merge = TestingTest.flow
    flow.start
    TestingTest::Part.perform_one
    TestingTest::Part.perform_one
    assert_empty TestingTest::Merge.jobs, "the merge waits for its third part"
    assert_equal 1, TestingTest::Part.drain
    assert_equal [merge], TestingTest::Merge.jobs.map { |job| job["jid"] }
    assert_equal "merges", TestingTest::Merge.jobs.first["queue"]
    assert_equal 3, Jiggler::Testing.drain_all
    assert_equal TestingTest::FLOW_RUNS, TestingTest::RUNS
    assert_equal ["done"], Jiggler::Testing.workflow_steps(flow.id).values.uniq
    assert_equal parts.size + 3, Jiggler::Testing.workflow_steps(flow.id).size
  end

  it "holds a failed step's dependants: the error raises out of the drain, " \
    "as any job's" do
    flow = Jiggler::Workflow.new
    broken = flow.step(TestingTest::Broken)
    after = flow.step(TestingTest::Notify, "after", after: [broken])
    flow.start
    assert_equal "broken step",
      assert_raises(RuntimeError) { Jiggler::Testing.drain_all }.message
    assert_empty TestingTest::Notify.jobs
    assert_equal "waiting", Jiggler::Testing.workflow_steps(flow.id)[after]
  end

  it "performs an on_complete callback once every step of its group " \
    "was performed, last, in both modes" do
    flow, parts, = TestingTest.flow
    flow.on_complete(TestingTest::Outcome)
    flow.start
    assert_equal 7, Jiggler::Testing.drain_all
    assert_equal [[:notify, "done"], [:outcome, {"done" => parts.size + 3}]],
      TestingTest::RUNS.last(2)
    TestingTest::RUNS.clear
    inline, = TestingTest.flow
    inline.on_complete(TestingTest::Outcome)
    Jiggler::Testing.inline! { inline.start }
    assert_equal [:outcome, {"done" => 6}], TestingTest::RUNS.last
  end

  it "performs a workflow's steps at start in inline mode, " \
    "in dependency order, with their dependencies' results" do
    flow, = TestingTest.flow
    Jiggler::Testing.inline! { flow.start }
    assert_equal TestingTest::FLOW_RUNS, TestingTest::RUNS
    assert_empty Jiggler::Testing.jobs
    assert_empty store.queue_sizes
  end

  it "forgets the workflows started on clear_all, " \
    "and writes a workflow to the store when disabled" do
    flow, = TestingTest.flow
    flow.start
    Jiggler::Testing.clear_all
    assert_empty Jiggler::Testing.workflow_steps(flow.id)
    real, = TestingTest.flow
    Jiggler::Testing.disable! { real.start }
    assert_equal({"default" => 3}, store.queue_sizes)
    assert_empty Jiggler::Testing.jobs
  end
end

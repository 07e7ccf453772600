# frozen_string_literal: true

require "test_helper"
require "async"
require "logger"
require "jiggler/server/processor"
require "jiggler/server/steps"

# Jobs for the workflow tests.
module WorkflowTest
  RUNS = []

  class Add
    include Jiggler::Job

    def perform(a, b) = a + b
  end

  class Sum
    include Jiggler::Job

    def perform = RUNS << dependency_results.values.sum
  end

  # Fails until FLAKY_FAILURES is empty.
  FLAKY_FAILURES = []

  class Flaky
    include Jiggler::Job

    job_options retries: 0

    def perform = FLAKY_FAILURES.shift ? raise("not yet") : 1
  end

  OUTCOMES = []

  # An on_complete callback: records what became of its group's steps.
  class Report
    include Jiggler::Job

    def perform(label) = OUTCOMES << [label, workflow_outcome]
  end

  class Items
    include Jiggler::Job

    job_options batch_size: 10

    def perform_batch(args_list) = nil
  end
end

describe Jiggler::Workflow do
  before { [WorkflowTest::RUNS, WorkflowTest::OUTCOMES].each(&:clear) }

  # Performs what the queue holds until it is empty, as a server would; a failure goes to the dead set (retries: 0).
  def run_all(processor)
    Sync do
      until (taken = store.fetch("p1", ["default"], limit: 1)).empty?
        outcome = processor.call(taken.first)
        if outcome.is_a?(Jiggler::Store::Failed)
          store.fail(
            "p1", [outcome], reliable: true, dead_cutoff: 0.0, dead_max: 100
          )
        end
      end
    end
  end

  # One processor per test: its runs share the steps' state.
  def processor
    @processor ||= Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Logger.new(nil),
      results: store,
      steps: Jiggler::Server::Steps.new(
        process: "p1",
        reliable: true,
        logger: Logger.new(nil),
        store: -> { store }
      )
    )
  end

  it "writes the steps without dependencies to their queues " \
    "and holds the others" do
    flow = Jiggler::Workflow.new
    a = flow.step(WorkflowTest::Add, 1, 2)
    b = flow.step(WorkflowTest::Add, 3, 4)
    sum = flow.step(WorkflowTest::Sum, after: [a, b])
    assert_equal flow.id, flow.start
    queued = store.queue_entries("default").map do |payload|
      JSON.parse(payload)
    end
    assert_equal [a, b].sort, queued.map { |job| job["jid"] }.sort
    assert_equal [flow.id], queued.map { |job| job["workflow"] }.uniq
    assert_equal({a => "released", b => "released", sum => "waiting"},
      store.workflow_steps(flow.id))
  end

  it "hands a step its dependencies' results once they all succeeded, " \
    "through the processor" do
    flow = Jiggler::Workflow.new
    parts = [[1, 2], [3, 4]].map { |args| flow.step(WorkflowTest::Add, *args) }
    sum = flow.step(WorkflowTest::Sum, after: parts)
    flow.start
    Sync do
      store.fetch("p1", ["default"], limit: 2).each do |fetched|
        assert_same Jiggler::Server::Processor::COMPLETED,
          processor.call(fetched)
      end
      assert_equal 0, store.in_flight_count("p1"),
        "each step left flight with its completion"
      last = store.fetch("p1", ["default"], limit: 2)
      assert_equal [sum],
        last.map { |fetched| JSON.parse(fetched.payload)["jid"] }
      processor.call(last.first)
    end
    assert_equal [10], WorkflowTest::RUNS
    assert_equal ["done"], store.workflow_steps(flow.id).values.uniq
  end

  it "enqueues on_death at a step's death and holds its dependants " \
    "until it is retried from the dead set and succeeds" do
    WorkflowTest::FLAKY_FAILURES.replace([true])
    flow = Jiggler::Workflow.new
    flaky = flow.step(WorkflowTest::Flaky)
    sum = flow.step(WorkflowTest::Sum, after: flaky)
    flow.on_death(WorkflowTest::Add, 40, 2)
    flow.start
    run = lambda do
      Sync do
        store.fetch("p1", ["default"], limit: 1).map do |fetched|
          outcome = processor.call(fetched)
          if outcome.is_a?(Jiggler::Store::Failed)
            store.fail(
              "p1", [outcome], reliable: true, dead_cutoff: 0.0, dead_max: 100
            )
          end
          outcome
        end
      end
    end
    assert_predicate run.call.first, :dead?
    assert_equal({flaky => "dead", sum => "blocked"},
      store.workflow_steps(flow.id), "the dependant waits, blocked")
    death = store.queue_entries("default").map do |payload|
      JSON.parse(payload)
    end
    assert_equal [["WorkflowTest::Add", [40, 2], nil]],
      death.map { |job| job.values_at("name", "args", "workflow") },
      "the on_death callback, a job outside the workflow"
    store.clear_queue("default")
    payload, score = store.set_entries(:dead).first
    store.enqueue_set_entries(
      :dead, [[score, flaky]], now: Time.now.to_f
    ) { |from, job| Jiggler::JobRules.due(from, job, Time.now.to_f) }
    assert_same Jiggler::Server::Processor::COMPLETED, run.call.first
    run.call
    assert_equal [1], WorkflowTest::RUNS,
      "the dependant ran once its dependency succeeded, with its result"
    assert_equal flow.id, JSON.parse(payload)["workflow"],
      "the dead step kept its workflow"
  end

  it "nests groups, each with its callback after all its steps" do
    flow = Jiggler::Workflow.new
    first = flow.step(WorkflowTest::Add, 1, 1)
    inner_callback = nil
    group = flow.group do |outer|
      outer.step(WorkflowTest::Add, 2, 2, after: first)
      outer.group do |inner|
        if inner.step(WorkflowTest::Add, 3, 3)
          inner_callback = inner.on_success(WorkflowTest::Sum)
        end
      end
    end
    after_group = flow.step(WorkflowTest::Add, 0, 0, after: group)
    last = flow.on_success(WorkflowTest::Sum)
    steps = flow.steps
    assert_equal 3, group.jids.size,
      "the group holds its step and its nested group's step and callback"
    assert_equal 1, steps[inner_callback][:after].size
    assert_equal group.jids.sort, steps[after_group][:after].sort
    assert_equal (steps.keys - [last]).sort, steps[last][:after].sort
  end

  it "runs on_complete once every step ended, " \
    "telling it which died and which they blocked" do
    WorkflowTest::FLAKY_FAILURES.replace([true])
    flow = Jiggler::Workflow.new
    fine = flow.step(WorkflowTest::Add, 1, 2)
    flaky = flow.step(WorkflowTest::Flaky)
    blocked = flow.step(WorkflowTest::Sum, after: flaky)
    success = flow.on_success(WorkflowTest::Sum)
    complete = flow.on_complete(WorkflowTest::Report, "workflow")
    flow.start
    run_all(processor)
    outcome = {
      fine => "done",
      flaky => "dead",
      blocked => "blocked",
      success => "blocked"
    }
    assert_equal [["workflow", outcome]], WorkflowTest::OUTCOMES
    assert_empty WorkflowTest::RUNS,
      "neither the blocked step nor on_success ran"
    assert_equal outcome.merge(complete => "done"),
      store.workflow_steps(flow.id)
  end

  it "runs on_complete after on_success when every step succeeded, " \
    "the inner group's before the outer's" do
    flow = Jiggler::Workflow.new
    inner_complete = nil
    group = flow.group do |inner|
      inner.step(WorkflowTest::Add, 1, 2)
      inner_complete = inner.on_complete(WorkflowTest::Report, "inner")
    end
    flow.on_complete(WorkflowTest::Report, "outer")
    success = flow.on_success(WorkflowTest::Sum)
    flow.start
    run_all(processor)
    assert_equal [3], WorkflowTest::RUNS, "on_success, given the group's result"
    step = group.jids.first
    expected = [
      ["inner", {step => "done"}],
      [
        "outer",
        {step => "done", success => "done", inner_complete => "done"}
      ]
    ]
    assert_equal expected, WorkflowTest::OUTCOMES
  end

  it "closes a group with on_complete, which no step can wait for" do
    flow = Jiggler::Workflow.new
    step = flow.step(WorkflowTest::Add, 1, 2)
    complete = flow.on_complete(WorkflowTest::Report, "done")
    assert_match(
      /on_complete/,
      assert_raises(Jiggler::Workflow::InvalidError) {
        flow.step(WorkflowTest::Add, 1, 2)
      }.message
    )
    assert_match(
      /already has its on_complete/,
      assert_raises(Jiggler::Workflow::InvalidError) {
        flow.on_complete(WorkflowTest::Report, "again")
      }.message
    )
    other = Jiggler::Workflow.new
    assert_match(
      /on_complete needs steps/,
      assert_raises(Jiggler::Workflow::InvalidError) {
        other.on_complete(WorkflowTest::Report, "x")
      }.message
    )
    success = flow.on_success(WorkflowTest::Sum)
    assert_equal [step], flow.steps[success][:after]
    assert_equal [], flow.steps[complete][:after]
    nested = Jiggler::Workflow.new
    inner_complete = nil
    nested.group do |inner|
      if inner.step(WorkflowTest::Add, 1, 2)
        inner_complete = inner.on_complete(WorkflowTest::Report, "inner")
      end
    end
    error = assert_raises(Jiggler::Workflow::InvalidError) do
      nested.step(WorkflowTest::Sum, after: inner_complete)
    end
    assert_match(/cannot wait for an on_complete callback/, error.message)
  end

  it "refuses a graph that cannot run, with a clear error" do
    flow = Jiggler::Workflow.new
    error = assert_raises(Jiggler::Workflow::InvalidError) { flow.step(String) }
    assert_match(/named Jiggler::Job class/, error.message)
    error = assert_raises(Jiggler::Workflow::InvalidError) do
      flow.step(WorkflowTest::Add, 1, 2, after: "nope")
    end
    assert_match(/unknown dependency "nope"/, error.message)
    assert_raises(Jiggler::Workflow::InvalidError) do
      flow.step(WorkflowTest::Items)
    end
    assert_raises(Jiggler::Workflow::InvalidError) do
      flow.on_death(WorkflowTest::Items)
    end
    assert_raises(Jiggler::Workflow::InvalidError) do
      flow.on_success(WorkflowTest::Sum)
    end
    assert_raises(Jiggler::Workflow::InvalidError) { flow.start }
    flow.step(WorkflowTest::Add, 1, 2)
    flow.on_success(WorkflowTest::Sum)
    assert_match(
      /on_success/,
      assert_raises(Jiggler::Workflow::InvalidError) {
        flow.step(WorkflowTest::Add, 1, 2)
      }.message
    )
    flow.start
    assert_match(
      /already started/,
      assert_raises(Jiggler::Workflow::InvalidError) { flow.start }.message
    )
  end

  it "finds a cycle in a graph edited by hand" do
    flow = Jiggler::Workflow.new
    a = flow.step(WorkflowTest::Add, 1, 2)
    b = flow.step(WorkflowTest::Add, 1, 2, after: a)
    flow.instance_variable_get(:@steps)[a][:after] = [b]
    assert_match(
      /cycle/,
      assert_raises(Jiggler::Workflow::InvalidError) { flow.start }.message
    )
  end
end

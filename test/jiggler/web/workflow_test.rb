# frozen_string_literal: true

require "test_helper"
require "support/web_session"

module WebWorkflowTest
  class Step
    include Jiggler::Job

    def perform(_value) = nil
  end
end

# The dashboard's workflow page: the graph of a workflow's steps, by depth, each with its state.
describe "Jiggler::Web workflow page" do
  include WebSession

  it "draws each step with its state, " \
    "and a wide column as one node with its counts" do
    flow = Jiggler::Workflow.new
    root = flow.step(WebWorkflowTest::Step, 0)
    leaves = Array.new(20) do |index|
      flow.step(WebWorkflowTest::Step, index, after: root)
    end
    last = flow.step(WebWorkflowTest::Step, 1, after: leaves)
    flow.start
    get "/workflows/#{flow.id}"
    assert_equal 200, last_response.status
    assert_includes body, %(data-step="#{root}" data-state="released")
    assert_includes body, %(data-step="#{last}" data-state="waiting")
    assert_includes body, "20 steps"
    assert_includes body, "20 waiting</text>"
    assert_equal 2, body.scan("<line ").size,
      "root to the wide column, the wide column to the last step"
  end

  it "draws a dead step, the steps it blocks, " \
    "and the on_complete callback after every step" do
    flow = Jiggler::Workflow.new
    doomed = flow.step(WebWorkflowTest::Step, 0)
    fine = flow.step(WebWorkflowTest::Step, 1)
    blocked = flow.step(WebWorkflowTest::Step, 2, after: doomed)
    complete = flow.on_complete(WebWorkflowTest::Step, 3)
    flow.start
    store.step_died(flow.id, doomed)
    get "/workflows/#{flow.id}"
    assert_includes body, %(data-step="#{doomed}" data-state="dead")
    assert_includes body, %(data-step="#{blocked}" data-state="blocked")
    assert_includes body, %(data-step="#{fine}" data-state="released")
    assert_includes body, %(data-step="#{complete}" data-state="waiting")
    assert_includes body, %(<span class="wf-legend wf-dead">dead 1</span>)
    assert_equal 4, body.scan("<line ").size,
      "the dead step to the blocked one, each step to the callback"
  end

  it "answers 404 for an unknown workflow" do
    get "/workflows/wf-nope"
    assert_equal 404, last_response.status
    assert_includes body, "No workflow wf-nope"
  end

  it "links a job's page to its workflow" do
    job = payload(workflow: "wf-1")
    add_failed(:dead, [[1_900_000_000.5, job]])
    get "/dead/1900000000.5-#{jid_of(job)}"
    assert_includes body, %(<a href="/workflows/wf-1">wf-1</a>)
  end
end

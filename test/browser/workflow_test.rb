# frozen_string_literal: true

require "test_helper"
require "support/browser_session"
require "support/web_session"

module BrowserWorkflowTest
  class Step
    include Jiggler::Job

    def perform(_value) = nil
  end
end

# The workflow page in headless Chromium: a graph of 1,001 steps, half way through, one dead, drawn within the page's
# CSP.
describe "workflow page in a browser" do
  include BrowserSession
  include WebSession

  it "draws a workflow as a graph, each step in its state" do
    flow = Jiggler::Workflow.new
    root = flow.step(BrowserWorkflowTest::Step, 0)
    leaves = Array.new(996) do |index|
      flow.step(BrowserWorkflowTest::Step, index, after: root)
    end
    merge = flow.step(BrowserWorkflowTest::Step, 1, after: leaves)
    flow.group do |group|
      group.step(BrowserWorkflowTest::Step, 2, after: merge)
      group.on_success(BrowserWorkflowTest::Step, 3)
    end
    complete = flow.on_complete(BrowserWorkflowTest::Step, 4)
    flow.start
    # The root and 400 leaves complete, as a server would complete them; one more leaf dies, blocking what follows.
    store.fetch("browser-test", ["default"], limit: 1).each do |fetched|
      store.complete_step(
        "browser-test",
        fetched,
        workflow: flow.id,
        jid: root,
        result: nil,
        reliable: true,
        retention: 60
      )
    end
    *completed, dying = store.fetch("browser-test", ["default"], limit: 401)
    completed.each do |fetched|
      jid = JSON.parse(fetched.payload)["jid"]
      store.complete_step(
        "browser-test",
        fetched,
        workflow: flow.id,
        jid: jid,
        result: nil,
        reliable: true,
        retention: 60
      )
    end
    store.step_died(flow.id, JSON.parse(dying.payload)["jid"])
    visit("/workflows/#{flow.id}")
    wait_in_browser("the graph") { page.at_css("svg.workflow") }
    states = page.evaluate(
      "Array.from(document.querySelectorAll('.wf-node[data-step]'))" \
      ".map(n => n.dataset.step + '=' + n.dataset.state)"
    )
    assert_includes states, "#{root}=done"
    assert_includes states, "#{merge}=blocked"
    assert_includes states, "#{complete}=waiting"
    assert_equal "996 steps", text(".wf-node:not([data-step]) text")
    assert_equal "done 401", text(".wf-legend.wf-done")
    assert_equal "released 595", text(".wf-legend.wf-released")
    assert_equal "dead 1", text(".wf-legend.wf-dead")
    assert_equal "blocked 3", text(".wf-legend.wf-blocked")
    edges = page.evaluate("document.querySelectorAll('line.wf-edge').length")
    assert_equal 9, edges,
      "root to the leaves, the leaves to the merge, the merge to the " \
      "group's step, that step to its callback, and each of those five " \
      "to the on_complete callback"
    assert_equal "595 released · 400 done · 1 dead",
      text(".wf-node:not([data-step]) .wf-counts")
    fill = page.evaluate(
      "getComputedStyle(document.querySelector('.wf-done rect')).fill"
    )
    refute_equal "rgb(0, 0, 0)", fill,
      "the stylesheet colors each state (the CSP lets it load)"
    screenshot("workflow")
  end
end

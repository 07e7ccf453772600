# frozen_string_literal: true

require_relative "../reliability/helper"

# A step's completion queues the steps that wait for it, and an idle server runs them at once, as it runs a pushed
# job: also when that completion came from the server's first fetch, at its start (on SQLite, the listener then took
# the counters it compares with after the push, which it never heard of, and the steps waited for the fetcher's 5 s
# poll).
StoreTarget.describe_each("a workflow started before its server") do
  include ReliabilityHelper

  it "runs the step released by the first fetch's step at once" do
    flow = Jiggler::Workflow.new
    first = flow.step(Reliability::QuickStepJob)
    second = flow.step(Reliability::StepJob, "second", after: first)
    flow.start
    start_reliable("-c", "5")
    waited = recorded_at("start:#{second}", timeout: 15) -
      recorded_at("done:#{first}")
    # a lost announcement waits for the fetcher's poll of 5 s (5.008 s on SQLite with the listener started last)
    assert_operator waited, :<, 2.0,
      "the released step should start as a pushed job does"
  end
end

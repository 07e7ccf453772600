# frozen_string_literal: true

require_relative "helper"

# A workflow of 10,000 steps (a fan-out of 9,000 from one root, a fan-in of all 9,000, a step handed the results of
# 20, a nested group with a group nested in it, each with its on_success callback, the inner one with its on_complete
# callback, and the workflow's callbacks, on_complete last) run by
# servers killed with SIGKILL every second. Each step records "start:<jid>" and "done:<jid>" (an O_APPEND file:
# one order for every process), so the record shows that no step started before each of its dependencies had run to
# its end, that every step ran, and how often each ran. A step runs more than once only when the server running it
# was killed before its completion reached the store (at-least-once): every extra run must follow a run by a server
# that was killed. A callback released twice would run twice with no kill to explain it. Beside it runs a workflow
# of 20 steps that die, whose on_death and on_complete callbacks must run once and whose step after them must never
# start. Each on_complete callback must be released once (a second run only after a kill), after every other step
# of its group ended, and must find them as they ended: done, or dead and blocked.
StoreTarget.describe_each("workflows under kill -9") do
  include ReliabilityHelper

  # @returns [Array(Jiggler::Workflow, Hash(String, String))] the workflow and its named steps.
  def build_workflow
    flow = Jiggler::Workflow.new
    named = {"root" => flow.step(Reliability::StepJob, "root")}
    leaves = Array.new(9_000) do |index|
      flow.step(Reliability::StepJob, index, after: named["root"])
    end
    named["merge"] = flow.step(
      Reliability::MergeStepJob, (0...20).to_a, after: leaves.first(20)
    )
    named["fan-in"] = flow.step(Reliability::StepJob, "fan-in", after: leaves)
    flow.group do |group|
      923.times do |index|
        group.step(Reliability::StepJob, "g#{index}", after: named["root"])
      end
      group.group do |inner|
        69.times do |index|
          inner.step(Reliability::StepJob, "i#{index}", after: named["root"])
        end
        named["inner callback"] =
          inner.on_success(Reliability::StepJob, "inner callback")
        named["inner complete"] =
          inner.on_complete(Reliability::CompleteStepJob, "inner complete")
      end
      named["group callback"] =
        group.on_success(Reliability::StepJob, "group callback")
    end
    named["workflow callback"] =
      flow.on_success(Reliability::StepJob, "workflow callback")
    named["workflow complete"] =
      flow.on_complete(Reliability::CompleteStepJob, "workflow complete")
    [flow, named]
  end

  it "runs every step after its dependencies, and each callback once, " \
    "while servers are killed" do
    flow, named = build_workflow
    assert_equal 10_000, flow.steps.size
    # Beside it, a workflow whose 20 steps die: its on_death callback runs once, the step after them never.
    doomed = Jiggler::Workflow.new
    dying = Array.new(20) { doomed.step(Reliability::DyingStepJob) }
    held = doomed.step(Reliability::StepJob, "never", after: dying)
    death = doomed.on_death(Reliability::StepJob, "death callback")
    doomed_complete =
      doomed.on_complete(Reliability::CompleteStepJob, "doomed complete")
    started = now
    flow.start
    doomed.start
    env = {
      "JIGGLER_TEST_MAX_CRASHES" => "1000",
      "JIGGLER_TEST_POLL_INTERVAL" => "0.5"
    }
    servers = Array.new(2) do
      start_reliable("-c", "10", env: env, recovery_timeout: 1)
    end
    killed = []
    finished = -> { recorded.include?("done:#{named["workflow complete"]}") }
    while !finished.call && now - started < 120
      sleep 1
      break if finished.call
      victim = servers.shift
      victim.signal(:KILL)
      victim.wait(timeout: 5)
      killed << victim.pid
      servers << start_reliable("-c", "10", env: env, recovery_timeout: 1)
    end
    wait_for(
      timeout: 60,
      message: "the workflow's on_complete callback to run"
    ) { finished.call }
    elapsed = now - started

    wait_for(timeout: 30, message: "the on_death callback to run") do
      recorded.include?("done:#{death}")
    end
    wait_for(
      timeout: 30,
      message: "the dying workflow's on_complete callback to run"
    ) { recorded.include?("done:#{doomed_complete}") }
    records = self.records
    first_start = {}
    first_done = {}
    starts = Hash.new(0)
    runs = Hash.new { |hash, jid| hash[jid] = [] }
    records.each_with_index do |(value, pid, _), line|
      kind, jid = value.split(":", 2)
      if kind == "start"
        first_start[jid] ||= line
        starts[jid] += 1
      end
      next unless kind == "done"
      first_done[jid] ||= line
      runs[jid] << pid
    end
    steps = flow.steps
    assert_equal (steps.keys + [death, doomed_complete]).sort, runs.keys.sort,
      "every step ran to its end, and the dying workflow's callbacks"
    early = steps.select do |jid, step|
      step[:after].any? do |dep|
        first_done.fetch(dep) > first_start.fetch(jid)
      end
    end
    assert_empty early.keys,
      "steps that started before a dependency had run to its end"
    unexplained = runs.select do |_, pids|
      pids[0...-1].any? { |pid| !killed.include?(pid) }
    end
    assert_empty unexplained,
      "steps that ran again though the server of their earlier run " \
        "was not killed"
    assert recorded.include?("results:#{named["merge"]}:ok"),
      "the merge step got its dependencies' results"
    refute recorded.any? { |value| value.end_with?(":bad") }
    assert_empty dying.reject { |jid| first_start.key?(jid) },
      "every dying step ran"
    refute first_start.key?(held), "the step after dying steps never runs"
    completes = {
      named["inner complete"] => "done=70",
      named["workflow complete"] => "done=9999",
      doomed_complete => "blocked=1,dead=20"
    }
    completes.each do |jid, outcome|
      assert_equal 1,
        runs[jid].size - runs[jid][0...-1].count { |pid| killed.include?(pid) },
        "on_complete #{outcome} released once"
      assert recorded.include?("outcome:#{jid}:#{outcome}"),
        "on_complete found its group's steps #{outcome}"
    end
    late = (steps.keys - [named["workflow complete"]]).reject do |jid|
      first_done.fetch(jid) < first_start.fetch(named["workflow complete"])
    end
    assert_empty late,
      "steps that ended after the workflow's on_complete callback started"
    callbacks = named.slice(
      "inner callback", "group callback", "workflow callback",
      "inner complete", "workflow complete"
    ).transform_values { |jid| runs[jid].size }
    callbacks["on_death"] = runs[death].size
    callbacks["dying on_complete"] = runs[doomed_complete].size
    wait_for(timeout: 10, message: "every step done in the store") do
      store.workflow_steps(flow.id).values.uniq == ["done"]
    end
    again = runs.values.sum(&:size) - runs.size
    restarts = steps.keys.sum { |jid| starts[jid] - 1 }
    puts format(
      "\nworkflow on %s: %d steps in %.1f s, %d servers killed -9; " \
        "steps started again after a kill: %d, " \
        "run to their end twice: %d; callback runs: %s; " \
        "steps before their dependencies: %d",
      target_name, steps.size, elapsed, killed.size, restarts, again,
      callbacks.map { |name, count| "#{name} #{count}" }.join(", "), early.size
    )
    assert_operator killed.size, :>=, 2,
      "servers should have been killed mid-workflow"
    assert_operator restarts, :>, 0,
      "some kills should have caught steps mid-run"
  end
end

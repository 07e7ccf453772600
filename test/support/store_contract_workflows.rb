# frozen_string_literal: true

# Workflows (contract.md, "Workflows"): a workflow's graph written at once, and each step completed with its
# acknowledgement, once per jid, releasing the dependants whose last dependency it was.
module StoreContract
  module Specs
    def describe_workflows
      it "queues the steps without dependencies and holds the others" do
        a, b, c = step_jobs(3)
        subject.create_workflow(
          "wf-1", [step(a, 0, [c]), step(b, 0, [c]), step(c, 2, [])]
        )
        assert_equal [a, b].map(&:last), subject.queue_entries("default")
        assert_equal(
          {a.first => "released", b.first => "released", c.first => "waiting"},
          subject.workflow_steps("wf-1")
        )
      end

      it "releases a dependant when its last dependency completes, " \
        "and acknowledges each step with its completion" do
        a, b, c = step_jobs(3)
        subject.create_workflow(
          "wf-1", [step(a, 0, [c]), step(b, 0, [c]), step(c, 2, [])]
        )
        first, second = fetch(limit: 2)
        assert complete(first, a.first, result: "1")
        assert_equal({}, subject.queue_sizes)
        assert complete(second, b.first, result: %({"x":2}))
        assert_equal [c.last], subject.queue_entries("default")
        assert_equal 0, subject.in_flight_count(PROCESS)
        assert_equal 2, subject.counts[:processed]
        assert_equal(
          {a.first => "1", b.first => %({"x":2})},
          subject.step_results("wf-1", [a.first, b.first])
        )
        assert_equal "done", subject.workflow_steps("wf-1")[a.first]
      end

      it "completes a step once however often it is completed " \
        "(a second delivery)" do
        a, c = step_jobs(2)
        subject.create_workflow("wf-1", [step(a, 0, [c]), step(c, 1, [])])
        first = fetch(limit: 1).first
        assert complete(first, a.first)
        # nothing left to requeue: the step left flight with its completion
        subject.requeue(PROCESS)
        refute complete(first, a.first)
        # delivered again, as after a reaper found it
        subject.push("default", [a.last])
        assert_equal [c.last, a.last], subject.queue_entries("default")
        again = fetch(limit: 2).find { |fetched| fetched.payload == a.last }
        refute complete(again, a.first)
        # c released once, a acknowledged
        assert_equal [c.last], subject.in_flight(PROCESS).map(&:payload)
      end

      it "completes no step the workflow does not hold, " \
        "and none of a workflow it does not know" do
        a, c = step_jobs(2)
        subject.create_workflow("wf-1", [step(a, 0, [c]), step(c, 1, [])])
        stranger = fetch(limit: 1).first
        refute complete(stranger, "f" * 24)
        refute complete(stranger, a.first, workflow: "wf-unknown")
        assert_equal(
          {a.first => "released", c.first => "waiting"},
          subject.workflow_steps("wf-1")
        )
        assert_equal 0, subject.in_flight_count(PROCESS),
          "the delivery is acknowledged all the same"
      end

      it "pushes the on_death callback at the first death of a step, once" do
        a, b, c = step_jobs(3)
        callback = job(name: "Alert")
        subject.create_workflow(
          "wf-1",
          [step(a, 0, [c]), step(b, 0, [c]), step(c, 2, [])],
          on_death: ["alerts", callback]
        )
        refute subject.step_died("wf-1", c.first.reverse),
          "a step the workflow does not hold"
        assert subject.step_died("wf-1", a.first)
        refute subject.step_died("wf-1", a.first), "the same death again"
        refute subject.step_died("wf-1", b.first), "a second step's death"
        assert_equal [callback], subject.queue_entries("alerts")
      end

      it "records a death without a callback, " \
        "and none for a step already done" do
        a, c = step_jobs(2)
        subject.create_workflow("wf-1", [step(a, 0, [c]), step(c, 1, [])])
        assert complete(fetch(limit: 1).first, a.first)
        refute subject.step_died("wf-1", a.first)
        assert subject.step_died("wf-1", c.first)
        assert_equal [c.last], subject.queue_entries("default")
      end

      it "releases an on_complete callback once every member ended, " \
        "after the on_success callback it waits for" do
        a, b, success, finish = step_jobs(4)
        subject.create_workflow("wf-1", [
          step(a, 0, [success], callbacks: [finish]),
          step(b, 0, [success], callbacks: [finish]),
          step(success, 2, [], callbacks: [finish]),
          step(finish, 3, [])
        ])
        first, second = fetch(limit: 2)
        assert complete(first, a.first)
        assert complete(second, b.first)
        assert_equal [success.last], subject.queue_entries("default")
        assert_equal "waiting", subject.workflow_steps("wf-1")[finish.first]
        assert complete(fetch(limit: 1).first, success.first)
        assert_equal [finish.last], subject.queue_entries("default")
        members = ["done", [success.first, finish.first]]
        expected = {
          a.first => members,
          b.first => members,
          success.first => ["done", [finish.first]],
          finish.first => ["released", []]
        }
        assert_equal expected, subject.workflow_graph("wf-1"),
          "edges to the on_complete callback after the dependants"
      end

      it "ends a dead step's dependants with it (blocked), " \
        "releasing the on_complete callback once" do
        a, b, c, d, finish = step_jobs(5)
        members = {callbacks: [finish]}
        subject.create_workflow("wf-1", [
          step(a, 0, [b], **members),
          step(b, 1, [c], **members),
          step(c, 1, [], **members),
          step(d, 0, [], **members),
          step(finish, 4, [])
        ])
        first, second = fetch(limit: 2)
        assert subject.step_died("wf-1", a.first)
        assert_equal(
          {
            a.first => "dead",
            b.first => "blocked",
            c.first => "blocked",
            d.first => "released",
            finish.first => "waiting"
          },
          subject.workflow_steps("wf-1")
        )
        assert complete(second, d.first)
        assert_equal [finish.last], subject.queue_entries("default"),
          "d ended the last member"
        refute subject.step_died("wf-1", a.first),
          "the same step dying again (retried from the dead set)"
        assert complete(first, a.first),
          "retried from the dead set, it succeeds"
        assert_equal [finish.last, b.last], subject.queue_entries("default"),
          "b released, the callback not again"
        assert_equal "released", subject.workflow_steps("wf-1")[b.first]
        assert complete(fetch(limit: 2).last, b.first)
        assert_equal [c.last], subject.queue_entries("default")
      end

      it "releases nested groups' on_complete callbacks, " \
        "the outer one after the inner" do
        x, y, z, inner, outer = step_jobs(5)
        subject.create_workflow("wf-1", [
          step(x, 0, [y], callbacks: [inner, outer]),
          step(y, 1, [], callbacks: [inner, outer]),
          step(z, 0, [], callbacks: [outer]),
          step(inner, 2, [], callbacks: [outer]),
          step(outer, 4, [])
        ])
        x_run, z_run = fetch(limit: 2)
        subject.step_died("wf-1", x.first)
        assert_equal [inner.last], subject.queue_entries("default"),
          "x died, y blocked: the inner group ended"
        assert complete(z_run, z.first)
        assert complete(fetch(limit: 1).first, inner.first)
        assert_equal [outer.last], subject.queue_entries("default")
        assert_equal "dead", subject.workflow_steps("wf-1")[x.first]
        assert_equal x.last, x_run.payload
      end

      it "releases an on_complete callback once " \
        "when its last member is completed twice" do
        a, finish = step_jobs(2)
        subject.create_workflow(
          "wf-1", [step(a, 0, [], callbacks: [finish]), step(finish, 1, [])]
        )
        first = fetch(limit: 1).first
        assert complete(first, a.first)
        refute complete(first, a.first)
        refute subject.step_died("wf-1", a.first), "a step done does not die"
        subject.push("default", [a.last])
        refute complete(
          fetch(limit: 2).find { |fetched| fetched.payload == a.last }, a.first
        )
        assert_equal [finish.last],
          subject.in_flight(PROCESS).map(&:payload) +
            subject.queue_entries("default")
      end

      it "completes a step taken at most once (reliable: false)" do
        a, c = step_jobs(2)
        subject.create_workflow("wf-1", [step(a, 0, [c]), step(c, 1, [])])
        first = fetch(limit: 1, reliable: false).first
        assert complete(first, a.first, reliable: false)
        assert_equal [c.last], subject.queue_entries("default")
        assert_equal 1, subject.counts[:processed]
      end

      it "releases a fan-out of many dependants in one step" do
        root, *leaves = step_jobs(1_201)
        subject.create_workflow("wf-1", [
          step(root, 0, leaves.map(&:first)),
          *leaves.map { |leaf| step(leaf, 1, []) }
        ])
        assert complete(fetch(limit: 1).first, root.first)
        assert_equal({"default" => 1_200}, subject.queue_sizes)
      end

      it "gives the graph: each step's state and dependants" do
        a, b, c = step_jobs(3)
        subject.create_workflow(
          "wf-1", [step(a, 0, [c]), step(b, 0, [c]), step(c, 2, [])]
        )
        expected = {
          a.first => ["released", [c.first]],
          b.first => ["released", [c.first]],
          c.first => ["waiting", []]
        }
        assert_equal expected, subject.workflow_graph("wf-1")
      end

      it "forgets every workflow on clear_all" do
        a, c = step_jobs(2)
        subject.create_workflow("wf-1", [step(a, 0, [c]), step(c, 1, [])])
        subject.clear_all
        assert_equal({}, subject.workflow_steps("wf-1"))
      end
    end
  end

  # Step payloads: [jid, payload] pairs.
  def step_jobs(count)
    Array.new(count) do
      jid = SecureRandom.hex(12)
      [jid, job(jid: jid, workflow: "wf-1")]
    end
  end

  # A row of create_workflow; `callbacks`: the on_complete callbacks waiting for the step to end.
  def step((jid, payload), waiting, dependants, callbacks: [])
    [
      jid,
      "default",
      payload,
      waiting,
      dependants.map { |dep| dep.is_a?(Array) ? dep.first : dep },
      callbacks.map(&:first)
    ]
  end

  def complete(fetched, jid, result: nil, reliable: true, workflow: "wf-1")
    subject.complete_step(
      PROCESS,
      fetched,
      workflow: workflow,
      jid: jid,
      result: result,
      reliable: reliable,
      retention: 60
    )
  end
end

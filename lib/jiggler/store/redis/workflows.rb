# frozen_string_literal: true

require_relative "../step_state"

require_relative "script"

module Jiggler
  module Store
    class Redis
      # Workflows in Redis: one hash per workflow (Keys#workflow) holds the whole graph, so each step is one script
      # on one key (workflow.lua writes it, step.lua completes a step with its acknowledgement).
      module Workflows
        WORKFLOW = Script.new("workflow")
        STEP = Script.new("step", parts: ["steps"])
        DIED = Script.new("died", parts: ["steps"])
        private_constant :WORKFLOW, :STEP, :DIED

        # Writes a workflow in one atomic step; steps without dependencies go to their queues.
        # @parameter id [String]
        # @parameter steps [Array([String, String, String, Integer, Array(String), Array(String)])] jid, queue, payload,
        #   number of dependencies (of members, for an on_complete callback), the jids of the steps that wait for it
        #   and of the on_complete callbacks that wait for it to end.
        # @parameter on_death [Array(String) | Nil] queue and payload of the job to push when a step first dies.
        def create_workflow(id, steps, on_death: nil)
          argv = [
            @keys.wake,
            @keys.queue(""),
            steps.size.to_s,
            id,
            Time.now.to_f.to_s,
            *(on_death || ["", ""])
          ]
          steps.each do |jid, queue, payload, waiting, dependants, callbacks|
            argv.push(
              jid,
              queue,
              payload,
              waiting.to_s,
              dependants.join(","),
              callbacks.join(",")
            )
          end
          with do |redis|
            WORKFLOW.call(
              redis,
              [@keys.workflow(id), @keys.queues, @keys.workflows],
              argv
            )
          end
          nil
        end

        # Completes a step with its acknowledgement, once per jid (see step.lua).
        # @parameter process [String]
        # @parameter fetched [Fetched] the delivery, acknowledged in the same step (when `reliable`).
        # @parameter workflow [String] the workflow's id.
        # @parameter jid [String]
        # @parameter result [String | Nil] the step's return value as JSON, for its dependants.
        # @parameter retention [Numeric] seconds a finished workflow's state is kept.
        # @returns [Boolean] true when this call completed the step; false when it was done before.
        def complete_step(
          process,
          fetched,
          workflow:,
          jid:,
          result:,
          reliable:,
          retention:
        )
          keys = [
            @keys.workflow(workflow),
            @keys.in_flight(process),
            @keys.processed,
            @keys.queues,
            @keys.workflows
          ]
          argv = [
            reliable ? fetched.handle : "",
            jid,
            result.to_s,
            @keys.wake,
            @keys.queue(""),
            retention.ceil.to_s,
            workflow,
            (Time.now.to_f + retention).to_s
          ]
          with { |redis| STEP.call(redis, keys, argv) } == 1
        end

        # Records a step's death (see died.lua): it ends with the steps it blocks, releasing the on_complete callbacks
        # whose last member they were; the workflow's first death pushes its on_death callback.
        # @returns [Boolean] true for the workflow's first death.
        def step_died(workflow, jid)
          keys = [@keys.workflow(workflow), @keys.queues]
          with do |redis|
            DIED.call(redis, keys, [jid, @keys.wake, @keys.queue("")])
          end == 1
        end

        # The stored results of steps.
        # @returns [Hash(String, String | Nil)] jid => result JSON (nil for a step that returned nil or is not done).
        def step_results(workflow, jids)
          return {} if jids.empty?
          values = with do |redis|
            redis.call(
              "HMGET",
              @keys.workflow(workflow),
              *jids.map { |jid| "r:#{jid}" }
            )
          end
          jids.zip(values).to_h
        end

        # Each step's state: "waiting" (for dependencies), "blocked", "released" (queued, running or retrying),
        # "dead" or "done" (StepState).
        # @returns [Hash(String, String)] jid => state; empty for an unknown or expired workflow.
        def workflow_steps(workflow)
          workflow_graph(workflow).transform_values(&:first)
        end

        # Each step's state and the steps that wait for it, for the dashboard's graph.
        # @returns [Hash(String, [String, Array(String)])] jid => [state, dependants' and on_complete callbacks' jids].
        def workflow_graph(workflow)
          fields = with do |redis|
            redis.call("HGETALL", @keys.workflow(workflow))
          end
          steps = fields.keys.filter_map do |key|
            key.delete_prefix("q:") if key.start_with?("q:")
          end.to_h do |jid|
            state = StepState.of(
              fields.key?("done:#{jid}"),
              fields.key?("n:#{jid}"),
              fields.key?("dead:#{jid}")
            )
            [
              jid,
              [
                state,
                fields.fetch("d:#{jid}", "").split(","),
                fields.fetch("c:#{jid}", "").split(",")
              ]
            ]
          end
          StepState.graph(steps)
        end

        # Deletes every workflow's state (part of Store::Redis#clear_all).
        def clear_workflows
          ids = with { |redis| redis.call("ZRANGE", @keys.workflows, 0, -1) }
          ids.each_slice(CHUNK) do |slice|
            with do |redis|
              redis.call_v(["DEL", *slice.map { |id| @keys.workflow(id) }])
            end
          end
          with { |redis| redis.call("DEL", @keys.workflows) }
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../step_state"

module Jiggler
  module Store
    class Postgres
      # Workflows in PostgreSQL: a row per step in `workflow_steps` (its dependants and on_complete callbacks, whether
      # it is done, ended or dead, its result, and while it waits, its count of dependencies left and its payload) and
      # a row per workflow in `workflows`.
      # A waiting step is not a job row yet: its release inserts one, queued, in the transaction that completes its
      # last dependency. Completions of one workflow take its transaction advisory lock, so two steps finishing at
      # once decrement their shared dependants one after the other, never in a deadlock.
      module Workflows
        STEPS = "INSERT INTO @.workflow_steps " \
          "(workflow, jid, queue, waiting, payload, dependants, callbacks, " \
          "members_left) " \
          "SELECT $1, j, q, w, p, string_to_array(d, ','), " \
          "string_to_array(c, ','), m " \
          "FROM unnest($2::text[], $3::text[], $4::integer[], $5::bytea[], " \
          "$6::text[], $7::text[], $8::integer[]) AS r(j, q, w, p, d, c, m)"
        COMPLETE =
          "SELECT @.complete_step($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        DIED = "SELECT @.step_died($1, $2, $3, $4, $5)"
        private_constant :STEPS, :COMPLETE, :DIED

        # Writes a workflow in one transaction; steps without dependencies go to their queues.
        # @parameter steps [Array([String, String, String, Integer, Array(String), Array(String)])] jid, queue, payload,
        #   number of dependencies (of members, for an on_complete callback), the jids of the steps that wait for it
        #   and of the on_complete callbacks that wait for it to end.
        # @parameter on_death [Array(String) | Nil] queue and payload of the job to push when a step first dies.
        def create_workflow(id, steps, on_death: nil)
          now = Time.now.to_f
          # An on_complete callback counts its members down in `members_left` (Schema::WORKFLOW_CALLBACKS).
          callbacks = steps.flat_map(&:last).to_h { |jid| [jid, true] }
          write do
            @db.query(
              "INSERT INTO @.workflows " \
              "(id, steps_left, death_queue, death_payload) " \
              "VALUES ($1, $2, $3, $4)",
              [id, steps.size, on_death&.first, @db.bytes(on_death&.last)]
            )
            steps.each_slice(CHUNK) do |slice|
              jids, queues, payloads, waiting, dependants, ends =
                slice.transpose
              held = payloads.zip(waiting).map do |payload, count|
                @db.bytes(payload) unless count.zero?
              end
              left = jids.zip(waiting).map do |jid, count|
                callbacks[jid] ? count : 0
              end
              @db.query(
                STEPS,
                [
                  id,
                  jids,
                  queues,
                  waiting,
                  held,
                  dependants.map { |list| list.join(",") },
                  ends.map { |list| list.join(",") },
                  left
                ]
              )
            end
            roots = steps.select { |_, _, _, count| count.zero? }
            insert(
              "queued",
              roots.map { |_, queue, payload, *| [queue, now, payload] }
            )
            announce("queues") if roots.any?
          end
          nil
        end

        # Completes a step with its acknowledgement, once per jid: one call of the schema's `complete_step`
        # function (Schema::WORKFLOW_STEP), so the workflow's lock is held for one round trip's work, never across
        # round trips.
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
          with do
            @db.value(
              COMPLETE,
              [
                process,
                (fetched.handle if reliable),
                reliable,
                workflow,
                jid,
                result,
                Time.now.to_f,
                retention.to_f,
                @channel,
                "#{@channel}:workflow:#{workflow}"
              ]
            )
          end
        end

        # Records a step's death: one call of the schema's `step_died` function (Schema::WORKFLOW_DEATH), under the
        # workflow's lock as a completion: the step ends with the steps it blocks, releasing the on_complete callbacks
        # whose last member they were; the workflow's first death pushes its on_death callback, if any.
        # @returns [Boolean] true for the workflow's first death.
        def step_died(workflow, jid)
          with do
            @db.value(
              DIED,
              [
                workflow,
                jid,
                Time.now.to_f,
                @channel,
                "#{@channel}:workflow:#{workflow}"
              ]
            )
          end
        end

        # @returns [Hash(String, String | Nil)] jid => result JSON (nil for a step that returned nil or is not done).
        def step_results(workflow, jids)
          found = with do
            @db.query(
              "SELECT jid, result FROM @.workflow_steps " \
              "WHERE workflow = $1 AND jid = ANY($2::text[])",
              [workflow, jids]
            )
          end.to_h
          jids.to_h { |jid| [jid, found[jid]] }
        end

        # @returns [Hash(String, String)] jid => state (StepState); empty for an unknown workflow.
        def workflow_steps(workflow)
          workflow_graph(workflow).transform_values(&:first)
        end

        # @returns [Hash(String, [String, Array(String)])] jid => [state, dependants' and on_complete callbacks' jids],
        #   for the dashboard's graph.
        def workflow_graph(workflow)
          rows = with do
            @db.query(
              "SELECT jid, done, waiting, dead, " \
              "array_to_string(dependants, ','), " \
              "array_to_string(callbacks, ',') " \
              "FROM @.workflow_steps WHERE workflow = $1",
              [workflow]
            )
          end
          StepState.graph(
            rows.to_h do |jid, done, waiting, dead, dependants, callbacks|
              [
                jid,
                [
                  StepState.of(done, waiting.positive?, dead),
                  dependants.split(","),
                  callbacks.split(",")
                ]
              ]
            end
          )
        end

        # Deletes every workflow (part of Store::Postgres#clear_all).
        def clear_workflows
          write do
            %w[workflow_steps workflows].each do |table|
              @db.query("DELETE FROM @.#{table}")
            end
          end
        end

        private

        # Drops the state of finished workflows once it expired.
        def prune_workflows(now)
          @db.query(
            "DELETE FROM @.workflow_steps WHERE workflow IN " \
            "(SELECT id FROM @.workflows WHERE expires_at <= $1)",
            [now]
          )
          @db.query("DELETE FROM @.workflows WHERE expires_at <= $1", [now])
        end
      end
    end
  end
end

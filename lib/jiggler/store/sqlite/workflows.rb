# frozen_string_literal: true

require_relative "../step_state"

module Jiggler
  module Store
    class SQLite
      # Workflows in SQLite: a row per step in `workflow_steps` (its dependants and on_complete callbacks, whether it
      # is done, ended or dead, its result, and while it waits, its count of dependencies left and its payload) and a
      # row per workflow in `workflows` (steps not done, when it finished). A step waiting for its dependencies is not
      # a job row yet: its release inserts one, queued, in the transaction that completes its last dependency.
      module Workflows
        # Writes a workflow in one transaction; steps without dependencies go to their queues.
        # @parameter id [String]
        # @parameter steps [Array([String, String, String, Integer, Array(String), Array(String)])] jid, queue, payload,
        #   number of dependencies (of members, for an on_complete callback), the jids of the steps that wait for it
        #   and of the on_complete callbacks that wait for it to end.
        # @parameter on_death [Array(String) | Nil] queue and payload of the job to push when a step first dies.
        def create_workflow(id, steps, on_death: nil)
          now = Time.now.to_f
          write do |db|
            db.execute(
              "INSERT INTO workflows " \
              "(id, steps_left, death_queue, death_payload) " \
              "VALUES (?, ?, ?, ?)",
              [id, steps.size, *on_death]
            )
            steps.each_slice(CHUNK) do |slice|
              db.execute(
                "INSERT INTO workflow_steps (workflow, jid, queue, waiting, " \
                "payload, dependants, callbacks) VALUES " \
                "#{(["(?, ?, ?, ?, ?, ?, ?)"] * slice.size).join(", ")}",
                slice.flat_map do |jid, queue, payload, waiting, dependants, callbacks|
                  [
                    id,
                    jid,
                    queue,
                    waiting,
                    (payload unless waiting.zero?),
                    dependants.join(","),
                    callbacks.join(",")
                  ]
                end
              )
            end
            roots = steps.select { |_, _, _, waiting| waiting.zero? }
            insert(
              db,
              "queued",
              roots.map { |_, queue, payload, *| [queue, now, payload] },
              "enqueued"
            )
            count(db, "pushes", roots.size) if roots.any?
          end
          nil
        end

        # Completes a step with its acknowledgement, once per jid, in one transaction: the delivery leaves flight
        # (done, counted as processed), the step is marked done with its result and ends (unless it ended before),
        # and each dependant or on_complete callback whose last dependency or member it was becomes a queued job.
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
          now = Time.now.to_f
          write do |db|
            acked =
              reliable ? acknowledge_step(db, process, fetched.handle, now) : 0
            # One statement marks it done and ended, telling whether it had ended before (2: its death counted).
            step = db.execute(
              "UPDATE workflow_steps SET done = 1, result = ?, " \
              "ended = CASE ended WHEN 0 THEN 1 ELSE 2 END " \
              "WHERE workflow = ? AND jid = ? AND done = 0 " \
              "RETURNING ended, dependants, callbacks",
              [result, workflow, jid]
            ).first
            if acked == 1 || (step && !reliable)
              count(db, "processed", reliable ? acked : 1)
            end
            release_dependants(db, workflow, step, now, retention) if step
            !step.nil?
          end
        end

        # Records a step's death in one transaction: it ends, and so does each step that waits for it, directly or
        # not (blocked), releasing the on_complete callbacks whose last member they were; the workflow's first death
        # pushes its on_death callback, if any. A step the workflow does not hold, or one already done, changes nothing.
        # @returns [Boolean] true for the workflow's first death.
        def step_died(workflow, jid)
          write do |db|
            next false unless db.get_first_value(
              "SELECT done FROM workflow_steps WHERE workflow = ? AND jid = ?",
              [workflow, jid]
            ) == 0
            db.execute(
              "UPDATE workflow_steps SET dead = 1 " \
              "WHERE workflow = ? AND jid = ?",
              [workflow, jid]
            )
            now = Time.now.to_f
            end_steps(db, workflow, [jid], now)
            # A step ended before had its dependants ended with it: the walk stops there.
            front = [jid]
            until front.empty?
              front = end_steps(
                db,
                workflow,
                dependants_of(db, workflow, front),
                now
              )
            end
            first_death(db, workflow, now)
          end
        end

        # @returns [Hash(String, String | Nil)] jid => result JSON (nil for a step that returned nil or is not done).
        def step_results(workflow, jids)
          with do |db|
            found = jids.each_slice(CHUNK).flat_map do |slice|
              db.execute(
                "SELECT jid, result FROM workflow_steps WHERE workflow = ? " \
                "AND jid IN (#{(["?"] * slice.size).join(", ")})",
                [workflow, *slice]
              )
            end.to_h
            jids.to_h { |jid| [jid, found[jid]] }
          end
        end

        # @returns [Hash(String, String)] jid => state (StepState); empty for an unknown workflow.
        def workflow_steps(workflow)
          workflow_graph(workflow).transform_values(&:first)
        end

        # @returns [Hash(String, [String, Array(String)])] jid => [state, dependants' and on_complete callbacks' jids],
        #   for the dashboard's graph.
        def workflow_graph(workflow)
          rows = with do |db|
            db.execute(
              "SELECT jid, done, waiting, dead, dependants, callbacks " \
              "FROM workflow_steps WHERE workflow = ?",
              [workflow]
            )
          end
          StepState.graph(
            rows.to_h do |jid, done, waiting, dead, dependants, callbacks|
              [
                jid,
                [
                  StepState.of(done == 1, waiting.positive?, dead == 1),
                  dependants.split(","),
                  callbacks.split(",")
                ]
              ]
            end
          )
        end

        # Deletes every workflow (part of Store::SQLite#clear_all).
        def clear_workflows
          write do |db|
            %w[workflow_steps workflows].each do |table|
              db.execute("DELETE FROM #{table}")
            end
          end
        end

        private

        # Drops the state of finished workflows once it expired.
        def prune_workflows(db, now)
          db.execute(
            "DELETE FROM workflow_steps WHERE workflow IN " \
            "(SELECT id FROM workflows WHERE expires_at <= ?)",
            [now]
          )
          db.execute("DELETE FROM workflows WHERE expires_at <= ?", [now])
        end

        def acknowledge_step(db, process, handle, now)
          db.execute(
            "UPDATE jobs SET state = 'done', owner = NULL, run_at = ? " \
            "WHERE id = ? AND state = 'in_flight' AND owner = ?",
            [now, handle, process]
          )
          return 0 unless db.changes == 1
          db.add_event(handle, {"type" => "done"}, at: now)
          1
        end

        # Counts a completed step for its dependants and, unless it had ended before, its on_complete callbacks.
        def release_dependants(
          db,
          workflow,
          (ended, dependants, callbacks),
          now,
          retention
        )
          waiting = dependants.split(",") +
            ((ended == 1) ? callbacks.split(",") : [])
          ready = waiting.each_slice(CHUNK).flat_map do |slice|
            db.execute(
              "UPDATE workflow_steps SET waiting = waiting - 1 " \
              "WHERE workflow = ? " \
              "AND jid IN (#{(["?"] * slice.size).join(", ")}) " \
              "AND waiting > 0 RETURNING jid, waiting, queue, payload",
              [workflow, *slice]
            )
          end
          queue_released(db, workflow, ready, now)
          db.execute(
            "UPDATE workflows SET steps_left = steps_left - 1, " \
            "expires_at = CASE WHEN steps_left = 1 THEN ? END WHERE id = ?",
            [now + retention, workflow]
          )
        end

        # Queues each step whose count reached zero, of the [jid, waiting, queue, payload] rows of a decrement.
        def queue_released(db, workflow, rows, now)
          released = rows.select { |_, waiting, *| waiting.zero? }
          return if released.empty?
          insert(
            db,
            "queued",
            released.map { |_, _, queue, payload| [queue, now, payload] },
            "enqueued"
          )
          count(db, "pushes", released.size)
          # The payload now lives in the job's row.
          released.each_slice(CHUNK) do |slice|
            db.execute(
              "UPDATE workflow_steps SET payload = NULL WHERE workflow = ? " \
              "AND jid IN (#{(["?"] * slice.size).join(", ")})",
              [workflow, *slice.map(&:first)]
            )
          end
        end

        # Ends steps (done, dead or blocked), each once: the on_complete callbacks counting them have as many members
        # less to wait for, and those left with none are queued.
        # @returns [Array(String)] the jids this call ended (not those that had ended before).
        def end_steps(db, workflow, jids, now)
          ended = jids.each_slice(CHUNK).flat_map do |slice|
            db.execute(
              "UPDATE workflow_steps SET ended = 1 WHERE workflow = ? " \
              "AND jid IN (#{(["?"] * slice.size).join(", ")}) " \
              "AND ended = 0 RETURNING jid, callbacks",
              [workflow, *slice]
            )
          end
          ready = ended.flat_map { |_, callbacks| callbacks.split(",") }
            .tally
            .flat_map do |callback, members|
              db.execute(
                "UPDATE workflow_steps SET waiting = waiting - ? " \
                "WHERE workflow = ? AND jid = ? AND waiting > 0 " \
                "RETURNING jid, waiting, queue, payload",
                [members, workflow, callback]
              )
            end
          queue_released(db, workflow, ready, now)
          ended.map(&:first)
        end

        # @returns [Array(String)] the steps that wait for any of `jids`.
        def dependants_of(db, workflow, jids)
          jids.each_slice(CHUNK).flat_map do |slice|
            db.execute(
              "SELECT dependants FROM workflow_steps WHERE workflow = ? " \
              "AND jid IN (#{(["?"] * slice.size).join(", ")})",
              [workflow, *slice]
            ).flat_map { |(dependants)| dependants.split(",") }
          end.uniq
        end

        # Records the workflow's first death, pushing its on_death callback, if any.
        # @returns [Boolean] true for the first death.
        def first_death(db, workflow, now)
          row = db.execute(
            "UPDATE workflows SET died = 1 WHERE id = ? AND died = 0 " \
            "RETURNING death_queue, death_payload",
            [workflow]
          ).first
          return false unless row
          queue, payload = row
          if payload
            insert(db, "queued", [[queue, now, payload]], "enqueued")
            count(db, "pushes", 1)
          end
          true
        end
      end
    end
  end
end

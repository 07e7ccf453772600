# frozen_string_literal: true

require_relative "../step_state"

module Jiggler
  module Store
    class SQLite
      # Workflows in SQLite: a row per step in `workflow_steps` (its dependants, whether it is done, its result, and
      # while it waits, its count of dependencies left and its payload) and a row per workflow in `workflows` (steps
      # not done, when it finished). A step waiting for its dependencies is not a job row yet: its release inserts
      # one, queued, in the transaction that completes its last dependency.
      module Workflows
        # Writes a workflow in one transaction; steps without dependencies go to their queues.
        # @parameter id [String]
        # @parameter steps [Array([String, String, String, Integer, Array(String)])] jid, queue, payload, number of
        #   dependencies and the jids of the steps that wait for it.
        # @parameter on_death [Array(String) | Nil] queue and payload of the job to push when a step first dies.
        def create_workflow(id, steps, on_death: nil)
          now = Time.now.to_f
          write do |queue_db|
            db = queue_db.db
            db.execute("INSERT INTO workflows (id, steps_left, death_queue, death_payload) VALUES (?, ?, ?, ?)", [id, steps.size, *on_death])
            steps.each_slice(CHUNK) do |slice|
              db.execute("INSERT INTO workflow_steps (workflow, jid, queue, waiting, payload, dependants) VALUES " \
                "#{(["(?, ?, ?, ?, ?, ?)"] * slice.size).join(", ")}",
                slice.flat_map { |jid, queue, payload, waiting, dependants| [id, jid, queue, waiting, (payload unless waiting.zero?), dependants.join(",")] })
            end
            roots = steps.select { |*, waiting, _| waiting.zero? }
            insert(queue_db, "queued", roots.map { |_, queue, payload, *| [queue, now, payload] }, "enqueued")
            count(db, "pushes", roots.size) if roots.any?
          end
          nil
        end

        # Completes a step with its acknowledgement, once per jid, in one transaction: the delivery leaves flight
        # (done, counted as processed), the step is marked done with its result, and each dependant whose last
        # dependency it was becomes a queued job.
        # @returns [Boolean] true when this call completed the step; false when it was done before.
        def complete_step(process, fetched, workflow:, jid:, result:, reliable:, retention:)
          now = Time.now.to_f
          write do |queue_db|
            db = queue_db.db
            acked = reliable ? acknowledge_step(queue_db, process, fetched.handle, now) : 0
            db.execute("UPDATE workflow_steps SET done = 1, result = ? WHERE workflow = ? AND jid = ? AND done = 0", [result, workflow, jid])
            completed = db.changes == 1
            count(db, "processed", reliable ? acked : 1) if acked == 1 || (completed && !reliable)
            release_dependants(queue_db, workflow, jid, now, retention) if completed
            completed
          end
        end

        # Records a step's death, once per workflow: the first pushes the workflow's on_death callback, if any; a step
        # the workflow does not hold, or one already done, changes nothing.
        # @returns [Boolean] true for the workflow's first death.
        def step_died(workflow, jid)
          write do |queue_db|
            db = queue_db.db
            next false unless db.get_first_value("SELECT done FROM workflow_steps WHERE workflow = ? AND jid = ?", [workflow, jid]) == 0
            row = db.execute("UPDATE workflows SET died = 1 WHERE id = ? AND died = 0 RETURNING death_queue, death_payload", [workflow]).first
            next false unless row
            queue, payload = row
            if payload
              insert(queue_db, "queued", [[queue, Time.now.to_f, payload]], "enqueued")
              count(db, "pushes", 1)
            end
            true
          end
        end

        # @returns [Hash(String, String | Nil)] jid => result JSON (nil for a step that returned nil or is not done).
        def step_results(workflow, jids)
          with do |db|
            found = jids.each_slice(CHUNK).flat_map do |slice|
              db.execute("SELECT jid, result FROM workflow_steps WHERE workflow = ? AND jid IN (#{(["?"] * slice.size).join(", ")})", [workflow, *slice])
            end.to_h
            jids.to_h { |jid| [jid, found[jid]] }
          end
        end

        # @returns [Hash(String, String)] jid => "waiting", "released" or "done"; empty for an unknown workflow.
        def workflow_steps(workflow) = workflow_graph(workflow).transform_values(&:first)

        # @returns [Hash(String, [String, Array(String)])] jid => [state, dependants' jids], for the dashboard's graph.
        def workflow_graph(workflow)
          rows = with { |db| db.execute("SELECT jid, done, waiting, dependants FROM workflow_steps WHERE workflow = ?", [workflow]) }
          rows.to_h { |jid, done, waiting, dependants| [jid, [StepState.of(done == 1, waiting.positive?), dependants.split(",")]] }
        end

        # Deletes every workflow, then what the other roles hold.
        def clear_all
          write { |queue_db| %w[workflow_steps workflows].each { |table| queue_db.db.execute("DELETE FROM #{table}") } }
          super
        end

        private

        # Drops the state of finished workflows once it expired.
        def prune_workflows(db, now)
          db.execute("DELETE FROM workflow_steps WHERE workflow IN (SELECT id FROM workflows WHERE expires_at <= ?)", [now])
          db.execute("DELETE FROM workflows WHERE expires_at <= ?", [now])
        end

        def acknowledge_step(queue_db, process, handle, now)
          queue_db.db.execute("UPDATE jobs SET state = 'done', owner = NULL, run_at = ? WHERE id = ? AND state = 'in_flight' AND owner = ?",
            [now, handle, process])
          return 0 unless queue_db.db.changes == 1
          queue_db.add_event(handle, {"type" => "done"}, at: now)
          1
        end

        def release_dependants(queue_db, workflow, jid, now, retention)
          db = queue_db.db
          dependants = db.get_first_value("SELECT dependants FROM workflow_steps WHERE workflow = ? AND jid = ?", [workflow, jid]).split(",")
          ready = dependants.each_slice(CHUNK).flat_map do |slice|
            db.execute("UPDATE workflow_steps SET waiting = waiting - 1 WHERE workflow = ? " \
              "AND jid IN (#{(["?"] * slice.size).join(", ")}) AND waiting > 0 RETURNING jid, waiting, queue, payload", [workflow, *slice])
          end
          released = ready.select { |_, waiting, *| waiting.zero? }
          unless released.empty?
            insert(queue_db, "queued", released.map { |_, _, queue, payload| [queue, now, payload] }, "enqueued")
            count(db, "pushes", released.size)
            # The payload now lives in the job's row.
            released.each_slice(CHUNK) do |slice|
              db.execute("UPDATE workflow_steps SET payload = NULL WHERE workflow = ? AND jid IN (#{(["?"] * slice.size).join(", ")})",
                [workflow, *slice.map(&:first)])
            end
          end
          db.execute("UPDATE workflows SET steps_left = steps_left - 1, expires_at = CASE WHEN steps_left = 1 THEN ? END WHERE id = ?",
            [now + retention, workflow])
        end
      end
    end
  end
end

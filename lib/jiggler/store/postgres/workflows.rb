# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Workflows in PostgreSQL: a row per step in `workflow_steps` (its dependants, whether it is done, its result,
      # and while it waits, its count of dependencies left and its payload) and a row per workflow in `workflows`.
      # A waiting step is not a job row yet: its release inserts one, queued, in the transaction that completes its
      # last dependency. Completions of one workflow take its transaction advisory lock, so two steps finishing at
      # once decrement their shared dependants one after the other, never in a deadlock.
      module Workflows
        STEPS = "INSERT INTO @.workflow_steps (workflow, jid, queue, waiting, payload, dependants) " \
          "SELECT $1, j, q, w, p, string_to_array(d, ',') FROM unnest($2::text[], $3::text[], $4::integer[], $5::bytea[], $6::text[]) AS r(j, q, w, p, d)"
        DONE = "UPDATE @.workflow_steps SET done = true, result = $3 WHERE workflow = $1 AND jid = $2 AND NOT done " \
          "RETURNING dependants"
        RELEASE = "UPDATE @.workflow_steps SET waiting = waiting - 1 WHERE workflow = $1 AND jid = ANY($2::text[]) " \
          "AND waiting > 0 RETURNING jid, waiting, queue, payload"
        private_constant :STEPS, :DONE, :RELEASE

        # Writes a workflow in one transaction; steps without dependencies go to their queues.
        # @parameter steps [Array([String, String, String, Integer, Array(String)])] jid, queue, payload, number of
        #   dependencies and the jids of the steps that wait for it.
        def create_workflow(id, steps)
          now = Time.now.to_f
          write do
            @db.query("INSERT INTO @.workflows (id, steps_left) VALUES ($1, $2)", [id, steps.size])
            steps.each_slice(CHUNK) do |slice|
              jids, queues, payloads, waiting, dependants = slice.transpose
              held = payloads.zip(waiting).map { |payload, count| @db.bytes(payload) unless count.zero? }
              @db.query(STEPS, [id, jids, queues, waiting, held, dependants.map { |list| list.join(",") }])
            end
            roots = steps.select { |*, count, _| count.zero? }
            insert("queued", roots.map { |_, queue, payload, *| [queue, now, payload] })
            announce("queues") if roots.any?
          end
          nil
        end

        # Completes a step with its acknowledgement, once per jid, in one transaction (see contract.md).
        # @returns [Boolean] true when this call completed the step; false when it was done before.
        def complete_step(process, fetched, workflow:, jid:, result:, reliable:, retention:)
          now = Time.now.to_f
          write do
            @db.query("SELECT 1 FROM pg_advisory_xact_lock(hashtextextended($1, 0))", ["#{@channel}:workflow:#{workflow}"])
            acked = reliable ? @db.change("DELETE FROM @.jobs WHERE id = $1 AND state = 'in_flight' AND owner = $2", [fetched.handle, process]) : 0
            dependants = @db.query(DONE, [workflow, jid, result]).first
            count("processed", 1) if acked == 1 || (dependants && !reliable)
            next false unless dependants
            release_dependants(workflow, parse_array(dependants.first), now, retention)
            true
          end
        end

        # @returns [Hash(String, String | Nil)] jid => result JSON (nil for a step that returned nil or is not done).
        def step_results(workflow, jids)
          found = with { @db.query("SELECT jid, result FROM @.workflow_steps WHERE workflow = $1 AND jid = ANY($2::text[])", [workflow, jids]) }.to_h
          jids.to_h { |jid| [jid, found[jid]] }
        end

        # @returns [Hash(String, String)] jid => "waiting", "released" or "done"; empty for an unknown workflow.
        def workflow_steps(workflow)
          rows = with { @db.query("SELECT jid, done, waiting FROM @.workflow_steps WHERE workflow = $1", [workflow]) }
          rows.to_h { |jid, done, waiting| [jid, if done then "done" elsif waiting.positive? then "waiting" else "released" end] }
        end

        # Deletes every workflow, then what the other roles hold.
        def clear_all
          write { %w[workflow_steps workflows].each { |table| @db.query("DELETE FROM @.#{table}") } }
          super
        end

        private

        def release_dependants(workflow, dependants, now, retention)
          released = dependants.each_slice(CHUNK).flat_map do |slice|
            @db.query(RELEASE, [workflow, slice]).select { |_, waiting, *| waiting.zero? }
          end
          unless released.empty?
            insert("queued", released.map { |_, _, queue, payload| [queue, now, payload] })
            announce("queues")
            # The payload now lives in the job's row.
            @db.query("UPDATE @.workflow_steps SET payload = NULL WHERE workflow = $1 AND jid = ANY($2::text[])",
              [workflow, released.map(&:first)])
          end
          @db.query("UPDATE @.workflows SET steps_left = steps_left - 1, expires_at = CASE WHEN steps_left = 1 THEN $2::float8 END " \
            "WHERE id = $1", [workflow, now + retention])
        end

        # Drops the state of finished workflows once it expired.
        def prune_workflows(now)
          @db.query("DELETE FROM @.workflow_steps WHERE workflow IN (SELECT id FROM @.workflows WHERE expires_at <= $1)", [now])
          @db.query("DELETE FROM @.workflows WHERE expires_at <= $1", [now])
        end

        # A text[] column as an Array (the connection decodes it as text).
        def parse_array(value)
          return value if value.is_a?(Array)
          PG::TextDecoder::Array.new.decode(value)
        end
      end
    end
  end
end

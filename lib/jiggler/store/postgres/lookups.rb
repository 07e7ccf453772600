# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Finds a job by its jid where it waits outside the queues and sets (Jiggler.status): for a
      # concurrency slot, in a batch, as a workflow step held for its dependencies, or for a rate's
      # budget. Jobs waiting for a slot and batch items are rows of their state's partial index,
      # their payloads filtered on the jid's bytes first; a waiting step is found by the index of
      # waiting steps' jids, a reservation by its key.
      module Lookups
        FIND = "SELECT %s FROM @.jobs WHERE state = '%s' " \
          "AND position(convert_to($1, 'UTF8') IN payload) > 0 " \
          "AND @.json(payload) ->> 'jid' = $1 LIMIT 1"
        WAITING =
          format(FIND, "waiting_key, queue, payload, run_at, id", "waiting")
        AHEAD = "SELECT count(*) FROM @.jobs " \
          "WHERE waiting_key = $1 AND state = 'waiting' " \
          "AND (run_at, id) < ($2, $3)"
        BATCHING = format(FIND, "queue, batch, payload", "batching")
        private_constant :FIND, :WAITING, :AHEAD, :BATCHING

        # @returns [[String, String, String, Integer] | Nil] limit key, queue, payload and how many
        #   jobs wait before it, for a job waiting for a slot.
        def slot_waiter(jid)
          with do
            key, queue, payload, run_at, id = @db.query(WAITING, [jid]).first
            [key, queue, payload, @db.value(AHEAD, [key, run_at, id])] if key
          end
        end

        # @returns [[String, String, String] | Nil] queue, class name and payload of a batch item
        #   not yet in a batch.
        def batch_item(jid) = with { @db.query(BATCHING, [jid]).first }

        # @returns [[String, Integer, String] | Nil] workflow id, dependencies left and payload of a
        #   step that waits.
        def waiting_step(jid)
          with do
            # An on_complete callback counts down its members in members_left.
            @db.query(
              "SELECT workflow, " \
              "CASE WHEN members_left > 0 THEN members_left " \
              "ELSE waiting END, payload " \
              "FROM @.workflow_steps WHERE jid = $1 AND waiting > 0",
              [jid]
            ).first
          end
        end

        # @returns [Float | Nil] when a job that a rate limit deferred is due, while it holds its
        #   reservation.
        def rate_reservation(key, jid)
          with do
            @db.value(
              "SELECT at FROM @.rate_plan WHERE key = $1 AND member = $2",
              [key, "r:#{jid}"]
            )
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Finds a job by its jid where it waits outside the queues and sets (Jiggler.status): for a concurrency slot,
      # in a batch, as a workflow step held for its dependencies, or for a rate's budget. Jobs waiting for a slot and
      # batch items are rows read through the (state, id) index, their payloads filtered on the jid's bytes first;
      # a waiting step is found by the index of waiting steps' jids, a reservation by its key.
      module Lookups
        WAITING = "SELECT waiting_key, queue, payload, run_at, id FROM jobs " \
          "WHERE state = 'waiting' " \
          "AND instr(payload, ?1) > 0 AND json_valid(payload) " \
          "AND json_extract(payload, '$.jid') = ?1 LIMIT 1"
        AHEAD = "SELECT count(*) FROM jobs WHERE waiting_key = ? " \
          "AND state = 'waiting' AND (run_at, id) < (?, ?)"
        BATCHING = "SELECT queue, batch, payload FROM jobs " \
          "WHERE state = 'batching' " \
          "AND instr(payload, ?1) > 0 AND json_valid(payload) " \
          "AND json_extract(payload, '$.jid') = ?1 LIMIT 1"
        private_constant :WAITING, :AHEAD, :BATCHING

        # @returns [[String, String, String, Integer] | Nil] limit key, queue, payload and how many jobs wait before
        #   it, for a job waiting for a slot.
        def slot_waiter(jid)
          with do |db|
            key, queue, payload, run_at, id = db.get_first_row(WAITING, [jid])
            if key
              [
                key,
                queue,
                payload,
                db.get_first_value(AHEAD, [key, run_at, id])
              ]
            end
          end
        end

        # @returns [[String, String, String] | Nil] queue, class name and payload of a batch item not yet in a batch.
        def batch_item(jid) = with { |db| db.get_first_row(BATCHING, [jid]) }

        # @returns [[String, Integer, String] | Nil] workflow id, dependencies left and payload of a step that waits.
        def waiting_step(jid)
          with do |db|
            db.get_first_row(
              "SELECT workflow, waiting, payload FROM workflow_steps " \
              "WHERE jid = ? AND waiting > 0",
              [jid]
            )
          end
        end

        # @returns [Float | Nil] when a job that a rate limit deferred is due, while it holds its reservation.
        def rate_reservation(key, jid)
          with do |db|
            db.get_first_value(
              "SELECT at FROM rate_plan WHERE key = ? AND member = ?",
              [key, "r:#{jid}"]
            )
          end
        end
      end
    end
  end
end

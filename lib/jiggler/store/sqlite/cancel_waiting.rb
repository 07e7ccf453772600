# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Cancels a job where it waits (Jiggler.cancel): queued, scheduled, retrying, a batch item or waiting for a
      # concurrency slot. Finding it and moving it are one write transaction, so no fetch, due move or freed slot
      # can take it in between.
      module CancelWaiting
        WAITING = "SELECT id, state, waiting_key, payload FROM jobs " \
          "WHERE state IN " \
          "('queued', 'scheduled', 'retry', 'batching', 'waiting') " \
          "AND instr(payload, ?) > 0 AND json_valid(payload) " \
          "AND json_extract(payload, '$.jid') = ? LIMIT 1"
        private_constant :WAITING

        # Moves a waiting job to the dead set, as the block marks it, in one transaction; its unique lock is released
        # if it still holds it, and its history gets a `cancelled` event.
        # @parameter jid [String]
        # @parameter now [Float] epoch seconds, its time in the dead set.
        # @parameter dead_cutoff [Float] dead jobs older than this are dropped.
        # @parameter dead_max [Integer] the dead set keeps at most this many jobs.
        # @yields {|payload| ...} the job as it waits; returns the payload to store (marked cancelled).
        # @returns [Boolean] whether it was waiting (false: running, finished, or unknown).
        def cancel_waiting(jid, now:, dead_cutoff:, dead_max:)
          write do |db|
            id, state, waiting_key, payload =
              db.get_first_row(WAITING, [jid, jid])
            next false unless id
            marked = yield(payload)
            db.execute(
              "UPDATE jobs SET state = 'dead', run_at = ?, payload = ?, " \
              "owner = NULL, batch = NULL, waiting_key = NULL WHERE id = ?",
              [now, marked, id]
            )
            release_held_lock(db, payload, jid)
            forget_waiting_key(db, waiting_key) if state == "waiting"
            db.add_event(
              id,
              {"type" => "cancelled", "by" => cancelled_by(marked)},
              at: now
            )
            trim_dead(db, dead_cutoff, dead_max)
            true
          end
        end

        private

        def release_held_lock(db, payload, jid)
          db.execute(
            "DELETE FROM unique_locks " \
            "WHERE lock = json_extract(?, '$.unique.lock') AND jid = ?",
            [payload, jid]
          )
        end

        # A key whose last waiting job left no longer needs its limit and ttl.
        def forget_waiting_key(db, key)
          db.execute(
            "DELETE FROM limit_keys WHERE key = ? AND NOT EXISTS " \
            "(SELECT 1 FROM jobs WHERE waiting_key = ? AND state = 'waiting')",
            [key, key]
          )
        end

        def cancelled_by(payload)
          job = Payload.load(payload)
          job.dig("cancelled", "by") if job["cancelled"].is_a?(Hash)
        rescue Payload::MalformedError
          nil
        end
      end
    end
  end
end

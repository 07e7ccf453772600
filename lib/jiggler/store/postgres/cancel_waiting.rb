# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Cancels a job where it waits (Jiggler.cancel): queued, scheduled, retrying, a batch item or
      # waiting for a concurrency slot. In one transaction: the job is found, then one statement
      # moves it to the dead set only if its row is still as it was found (same state and payload:
      # a fetch, a due move or a freed slot that took it first wins, and the cancel request stops it
      # if it runs), releases its unique lock, and forgets its limit key with the key's last waiting
      # job. A job waiting for a slot moves under its key's advisory lock, as the limit's steps do.
      module CancelWaiting
        FIND = "SELECT id, state, waiting_key, payload FROM @.jobs " \
          "WHERE state IN " \
          "('queued', 'scheduled', 'retry', 'batching', 'waiting') " \
          "AND position(convert_to($1, 'UTF8') IN payload) > 0 " \
          "AND @.json(payload) ->> 'jid' = $1 LIMIT 1"
        MOVE = <<~SQL
          WITH moved AS (
            UPDATE @.jobs SET state = 'dead', run_at = $4, payload = $5, owner = NULL,
              batch = NULL, waiting_key = NULL
            WHERE id = $1 AND state = $2 AND payload = $3 RETURNING id),
          unlocked AS (
            DELETE FROM @.unique_locks WHERE lock = @.json($3) -> 'unique' ->> 'lock'
              AND jid = $6 AND EXISTS (SELECT 1 FROM moved)),
          forgotten AS (
            DELETE FROM @.limit_keys WHERE key = $7 AND EXISTS (SELECT 1 FROM moved)
              AND NOT EXISTS (SELECT 1 FROM @.jobs
                WHERE waiting_key = $7 AND state = 'waiting' AND id <> $1))
          SELECT count(*) FROM moved
        SQL
        # Looks again when the job left its place between the look and the move (it moved on).
        ATTEMPTS = 3
        private_constant :FIND, :MOVE, :ATTEMPTS

        # Moves a waiting job to the dead set, as the block marks it, in one atomic step.
        # @parameter jid [String]
        # @parameter now [Float] epoch seconds, its time in the dead set.
        # @parameter dead_cutoff [Float] dead jobs older than this are dropped.
        # @parameter dead_max [Integer] the dead set keeps at most this many jobs.
        # @yields {|payload| ...} the job as it waits; returns the payload to store (marked
        #   cancelled).
        # @returns [Boolean] whether it was waiting (false: running, finished, or unknown).
        def cancel_waiting(jid, now:, dead_cutoff:, dead_max:)
          write do
            moved = ATTEMPTS.times.any? do
              id, state, key, payload = @db.query(FIND, [jid]).first
              break false unless id
              lock_key("limit", key) if state == "waiting"
              marked = yield(payload)
              @db.value(
                MOVE,
                [
                  id,
                  state,
                  @db.bytes(payload),
                  now,
                  @db.bytes(marked),
                  jid,
                  key
                ]
              ) == 1
            end
            trim_dead(dead_cutoff, dead_max) if moved
            moved
          end
        end
      end
    end
  end
end

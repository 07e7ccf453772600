# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Unique jobs' locks in PostgreSQL (see ../contract.md, "Unique jobs"): one row per lock in
      # unique_locks, with the jid of the job holding it and when it expires. Taking the lock and
      # writing the job are one transaction.
      module Uniqueness
        # Takes a lock for a job and writes the job, or does nothing when the lock is held.
        # @parameter ttl [Numeric] seconds the lock lives at most.
        # @parameter at [Float | Nil] schedules the job for then; nil pushes it to its queue now.
        # @returns [Boolean] whether the job was written.
        def enqueue_unique(lock, jid, ttl, queue:, payload:, at: nil)
          write do
            next false unless take_lock(lock, jid, ttl, Time.now.to_f)
            at ? schedule([[at, payload]]) : push(queue, [payload])
            true
          end
        end

        # Releases a lock if `jid` holds it. @returns [Boolean] whether it was released.
        def unlock(lock, jid)
          with do
            @db.change(
              "DELETE FROM @.unique_locks WHERE lock = $1 AND jid = $2",
              [lock, jid]
            ) == 1
          end
        end

        # The jid of the job holding a lock. @returns [String | Nil]
        def lock_holder(lock)
          with do
            @db.value(
              "SELECT jid FROM @.unique_locks " \
              "WHERE lock = $1 AND expires_at > $2",
              [lock, Time.now.to_f]
            )
          end
        end

        private

        # Takes a lock for `jid` unless a live one exists (an expired one is replaced), within the
        # caller's transaction. @returns [Boolean] whether it was taken.
        def take_lock(lock, jid, ttl, now)
          @db.change(
            "INSERT INTO @.unique_locks AS u (lock, jid, expires_at) " \
            "VALUES ($1, $2, $3) ON CONFLICT (lock) DO UPDATE " \
            "SET jid = excluded.jid, expires_at = excluded.expires_at " \
            "WHERE u.expires_at <= $4",
            [lock, jid, now + ttl, now]
          ) == 1
        end
      end
    end
  end
end

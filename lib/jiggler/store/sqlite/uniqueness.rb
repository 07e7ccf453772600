# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Unique jobs' locks in SQLite (see ../contract.md, "Unique jobs"): one row per lock in unique_locks, with the
      # jid of the job holding it and when it expires. Taking the lock and writing the job are one transaction.
      module Uniqueness
        # Takes a lock for a job and writes the job, or does nothing when the lock is held.
        # @parameter ttl [Numeric] seconds the lock lives at most.
        # @parameter at [Float | Nil] schedules the job for then; nil pushes it to its queue now.
        # @returns [Boolean] whether the job was written.
        def enqueue_unique(lock, jid, ttl, queue:, payload:, at: nil)
          now = Time.now.to_f
          write do |db|
            next false unless take_lock(db, lock, jid, ttl, now)
            at ? schedule([[at, payload]]) : push(queue, [payload])
            true
          end
        end

        # Releases a lock if `jid` holds it. @returns [Boolean] whether it was released.
        def unlock(lock, jid)
          write do |db|
            db.execute(
              "DELETE FROM unique_locks WHERE lock = ? AND jid = ?",
              [lock, jid]
            )
            db.changes == 1
          end
        end

        # The jid of the job holding a lock. @returns [String | Nil]
        def lock_holder(lock)
          with do |db|
            db.get_first_value(
              "SELECT jid FROM unique_locks WHERE lock = ? AND expires_at > ?",
              [lock, Time.now.to_f]
            )
          end
        end

        private

        # Takes a lock for `jid` unless a live one exists (an expired one is dropped first), within the caller's
        # transaction. @returns [Boolean] whether it was taken.
        def take_lock(db, lock, jid, ttl, now)
          db.execute(
            "DELETE FROM unique_locks WHERE lock = ? AND expires_at <= ?",
            [lock, now]
          )
          db.execute(
            "INSERT OR IGNORE INTO unique_locks (lock, jid, expires_at) " \
            "VALUES (?, ?, ?)",
            [lock, jid, now + ttl]
          )
          db.changes == 1
        end
      end
    end
  end
end

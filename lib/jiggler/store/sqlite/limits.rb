# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Concurrency limits in SQLite (see ../contract.md, "Concurrency and rate limits"): the slots held per key in
      # limit_slots; a waiting job is a row in state "waiting" with its key in waiting_key; limit_keys holds the limit
      # and ttl of keys with jobs waiting. Each step is one transaction.
      module Limits
        # Takes a slot for a job about to run, or moves it from flight to its key's waiting list.
        # @returns [Boolean | Nil] true: run it; false: it waits; nil: it is no longer in flight here.
        def acquire_slot(process, fetched, key:, limit:, jid:, ttl:, reliable:)
          now = Time.now.to_f
          write do |db|
            db.execute(
              "DELETE FROM limit_slots WHERE key = ? AND expires_at <= ?",
              [key, now]
            )
            held = db.get_first_value(
              "SELECT count(*) FROM limit_slots WHERE key = ? AND jid = ?",
              [key, jid]
            ).positive?
            if held ||
                db.get_first_value(
                  "SELECT count(*) FROM limit_slots WHERE key = ?",
                  [key]
                ) < limit
              db.execute(
                "INSERT OR REPLACE INTO limit_slots (key, jid, expires_at) " \
                "VALUES (?, ?, ?)",
                [key, jid, now + ttl]
              )
              next true
            end
            id = wait_row(db, process, fetched, key, reliable) or next nil
            db.add_event(id, {"type" => "waiting", "key" => key}, at: now)
            db.execute(
              "INSERT OR REPLACE INTO limit_keys (key, max, ttl) " \
              "VALUES (?, ?, ?)",
              [key, limit, ttl]
            )
            false
          end
        end

        # Frees a job's slot and moves the oldest waiting jobs of its key to the head of their queues.
        # @returns [Integer] how many waiting jobs moved.
        def release_slot(key, jid, limit:, ttl:)
          write { |db| release(db, key, jid, limit, ttl) }
        end

        # Moves waiting jobs of keys whose slots expired. @returns [Integer] how many moved.
        def promote_expired
          write do |db|
            db.execute("SELECT key, max, ttl FROM limit_keys")
              .sum { |key, limit, ttl| release(db, key, nil, limit, ttl) }
          end
        end

        # Jobs waiting for a slot, by the queue they will run in. @returns [Hash(String, Integer)]
        def waiting_counts
          with do |db|
            db.execute(
              "SELECT queue, count(*) FROM jobs WHERE state = 'waiting' " \
              "GROUP BY queue"
            ).to_h
          end
        end

        private

        # Puts the job in its key's waiting list: the in-flight row (if still this process's), or a new row.
        # @returns [Integer | Nil] its id.
        def wait_row(db, process, fetched, key, reliable)
          unless reliable
            return insert(
              db,
              "waiting",
              [[fetched.queue, Time.now.to_f, fetched.payload]]
            ).first.tap { |id| set_waiting_key(db, id, key) }
          end
          db.execute(
            "UPDATE jobs " \
            "SET state = 'waiting', owner = NULL, waiting_key = ? " \
            "WHERE id = ? AND state = 'in_flight' AND owner = ?",
            [key, fetched.handle, process]
          )
          fetched.handle if db.changes == 1
        end

        def set_waiting_key(db, id, key)
          db.execute("UPDATE jobs SET waiting_key = ? WHERE id = ?", [key, id])
        end

        def release(db, key, jid, limit, ttl)
          now = Time.now.to_f
          db.execute(
            "DELETE FROM limit_slots " \
            "WHERE key = ? AND (jid = ? OR expires_at <= ?)",
            [key, jid, now]
          )
          free = limit - db.get_first_value(
            "SELECT count(*) FROM limit_slots WHERE key = ?",
            [key]
          )
          rows = if free.positive?
            db.execute(
              "SELECT id, json_extract(payload, '$.jid') FROM jobs " \
              "WHERE waiting_key = ? AND state = 'waiting' " \
              "ORDER BY run_at, id LIMIT ?",
              [key, free]
            )
          else
            []
          end
          rows.each do |id, waiting_jid|
            db.execute(
              "INSERT OR REPLACE INTO limit_slots (key, jid, expires_at) " \
              "VALUES (?, ?, ?)",
              [key, waiting_jid.to_s, now + ttl]
            )
            db.execute(
              "UPDATE jobs SET state = 'queued', waiting_key = NULL " \
              "WHERE id = ?",
              [id]
            )
            db.add_event(id, {"type" => "unblocked"}, at: now)
          end
          count(db, "pushes", rows.size) if rows.any?
          db.execute(
            "DELETE FROM limit_keys WHERE key = ? AND NOT EXISTS " \
            "(SELECT 1 FROM jobs WHERE waiting_key = ? AND state = 'waiting')",
            [key, key]
          )
          rows.size
        end
      end
    end
  end
end

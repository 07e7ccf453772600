# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Concurrency limits in PostgreSQL (see ../contract.md, "Concurrency and rate limits"): the
      # slots held per key in limit_slots; a waiting job is a row in state "waiting" with its key in
      # waiting_key; limit_keys holds the limit and ttl of keys with jobs waiting. Each step is one
      # transaction that first takes the key's transaction advisory lock (released at its commit,
      # never held while a job runs), so two processes counting the same key's slots take turns.
      module Limits
        # Takes a slot for a job about to run, or moves it from flight to its key's waiting list.
        # @returns [Boolean | Nil] true: run it; false: it waits; nil: it is no longer in flight
        #   here.
        def acquire_slot(process, fetched, key:, limit:, jid:, ttl:, reliable:)
          now = Time.now.to_f
          write do
            lock_key("limit", key)
            @db.query(
              "DELETE FROM @.limit_slots WHERE key = $1 AND expires_at <= $2",
              [key, now]
            )
            if slot_free?(key, jid, limit)
              next take_slot(key, jid, now + ttl) || true
            end
            wait_row(process, fetched, key, reliable) or next nil
            @db.query(
              "INSERT INTO @.limit_keys (key, max, ttl) VALUES ($1, $2, $3) " \
              "ON CONFLICT (key) DO UPDATE " \
              "SET max = excluded.max, ttl = excluded.ttl",
              [key, limit, ttl]
            )
            false
          end
        end

        # Frees a job's slot and moves the oldest waiting jobs of its key to the head of their
        # queues.
        # @returns [Integer] how many waiting jobs moved.
        def release_slot(key, jid, limit:, ttl:)
          write { release(key, jid, limit, ttl) }
        end

        # Moves waiting jobs of keys whose slots expired. @returns [Integer] how many moved.
        def promote_expired
          keys = with do
            @db.query("SELECT key, max, ttl FROM @.limit_keys ORDER BY key")
          end
          keys.sum { |key, limit, ttl| write { release(key, nil, limit, ttl) } }
        end

        # Jobs waiting for a slot, by the queue they will run in. @returns [Hash(String, Integer)]
        def waiting_counts
          with do
            @db.query(
              "SELECT queue, count(*) FROM @.jobs " \
              "WHERE state = 'waiting' GROUP BY queue"
            ).to_h
          end
        end

        private

        def slot_free?(key, jid, limit)
          slots = @db.query(
            "SELECT count(*), count(*) FILTER (WHERE jid = $2) " \
            "FROM @.limit_slots WHERE key = $1",
            [key, jid]
          ).first
          slots.last.positive? || slots.first < limit
        end

        def take_slot(key, jid, expires_at)
          @db.query(
            "INSERT INTO @.limit_slots (key, jid, expires_at) " \
            "VALUES ($1, $2, $3) " \
            "ON CONFLICT (key, jid) DO UPDATE " \
            "SET expires_at = excluded.expires_at",
            [key, jid, expires_at]
          )
          true
        end

        # Puts the job in its key's waiting list: the in-flight row (if still this process's), or a
        # new row.
        # @returns [Boolean] false when it is no longer this process's.
        def wait_row(process, fetched, key, reliable)
          unless reliable
            id = insert(
              "waiting",
              [[fetched.queue, Time.now.to_f, fetched.payload]]
            ).first
            return @db.query(
              "UPDATE @.jobs SET waiting_key = $1 WHERE id = $2",
              [key, id]
            )
          end
          @db.change(
            "UPDATE @.jobs SET state = 'waiting', owner = NULL, " \
            "waiting_key = $1 WHERE id = $2 AND #{QueuePath::HELD_BY} $3",
            [key, fetched.handle, process]
          ) == 1
        end

        def release(key, jid, limit, ttl)
          now = Time.now.to_f
          lock_key("limit", key)
          @db.query(
            "DELETE FROM @.limit_slots " \
            "WHERE key = $1 AND (jid = $2 OR expires_at <= $3)",
            [key, jid, now]
          )
          free = limit - @db.value(
            "SELECT count(*) FROM @.limit_slots WHERE key = $1",
            [key]
          )
          rows = free.positive? ? waiting(key, free) : []
          rows.each do |id, waiting_jid|
            take_slot(key, waiting_jid.to_s, now + ttl)
            @db.query(
              "UPDATE @.jobs SET state = 'queued', waiting_key = NULL " \
              "WHERE id = $1",
              [id]
            )
          end
          announce("queues") if rows.any?
          @db.query(
            "DELETE FROM @.limit_keys WHERE key = $1 AND NOT EXISTS " \
            "(SELECT 1 FROM @.jobs " \
            "WHERE waiting_key = $1 AND state = 'waiting')",
            [key]
          )
          rows.size
        end

        def waiting(key, free)
          @db.query(
            "SELECT id, @.json(payload) ->> 'jid' FROM @.jobs " \
            "WHERE waiting_key = $1 AND state = 'waiting' " \
            "ORDER BY run_at, id LIMIT $2",
            [key, free]
          )
        end
      end
    end
  end
end

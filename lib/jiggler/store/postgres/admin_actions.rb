# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # The acting side of the admin role of the PostgreSQL store, used by the Cleaner and the
      # dashboard: deletes, moves, pauses and clears, each in one transaction.
      module AdminActions
        ENTRY = "SELECT id, payload FROM @.jobs " \
          "WHERE state = $1 AND run_at = $2 " \
          "AND @.json(payload) ->> 'jid' = $3 FOR UPDATE"
        # The locks held by the unique jobs that a clear deletes (each only if that job holds it).
        HELD_LOCKS = "DELETE FROM @.unique_locks WHERE (lock, jid) IN " \
          "(SELECT @.json(payload) -> 'unique' ->> 'lock', " \
          "@.json(payload) ->> 'jid' FROM @.jobs " \
          "WHERE %s AND position('\"unique\"'::bytea IN payload) > 0)"
        # Everything a clear_all deletes; recurring tasks keep the settings servers recorded, and
        # the counters nothing (listeners compare no counter here: announcements are notifications).
        CLEARED = %w[jobs processes paused_queues results unique_locks
          limit_slots limit_keys rate_starts rate_plan counters process_signals
          metrics cancel_requests].freeze
        private_constant :ENTRY, :HELD_LOCKS, :CLEARED

        # Deletes entries of a set. @parameter entries [Array([Float, String])] score and jid of
        # each.
        # @returns [Integer] how many were deleted.
        def delete_set_entries(set, entries)
          write do
            ids = entry_rows(set, entries).map(&:first)
            if ids.any?
              @db.query(
                "DELETE FROM @.jobs WHERE id = ANY($1::bigint[])",
                [ids]
              )
            end
            ids.size
          end
        end

        # Moves entries of a set where the block says, now.
        # @yields {|from, payload| ...} the set and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_set_entries(set, entries, now: Time.now.to_f, &destination)
          write do
            rows = entry_rows(set, entries)
            from = set_state(set).to_sym
            rows.each do |id, payload|
              enqueue_one(id, from, payload, now, &destination)
            end
            announce("queues") if rows.any?
            rows.size
          end
        end

        # Moves entries of the scheduled or retry set to the dead set, scored `now`.
        # @yields {|payload| ...} an entry; returns the payload to store in the dead set
        #   (JobRules.killed).
        # @returns [Integer] how many moved.
        # @raises [ArgumentError] for the dead set.
        def kill_set_entries(set, entries, now: Time.now.to_f)
          if set_state(set) == "dead"
            raise ArgumentError,
              "only scheduled and retry entries can be killed " \
              "(got #{set.inspect})"
          end
          write do
            entry_rows(set, entries).each do |id, payload|
              @db.query(
                "UPDATE @.jobs SET state = 'dead', run_at = $1, " \
                "payload = $2 WHERE id = $3",
                [now, @db.bytes(yield(payload)), id]
              )
            end.size
          end
        end

        # Deletes one job waiting in a queue. @parameter payload [String] as queue_entries returned
        # it.
        # @returns [Boolean] whether it was there.
        def delete_queue_entry(name, payload)
          with do
            @db.change(
              "DELETE FROM @.jobs WHERE id = " \
              "(SELECT id FROM @.jobs WHERE state = 'queued' " \
              "AND queue = $1 AND payload = $2 " \
              "ORDER BY run_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)",
              [name, @db.bytes(payload)]
            ) == 1
          end
        end

        # Stops servers from fetching from a queue; jobs are still pushed to it.
        def pause_queue(name)
          with do
            @db.query(
              "INSERT INTO @.paused_queues (queue) VALUES ($1) " \
              "ON CONFLICT DO NOTHING",
              [name]
            )
          end
        end

        # Lets servers fetch from a paused queue again, waking idle ones.
        def resume_queue(name)
          write do
            @db.query("DELETE FROM @.paused_queues WHERE queue = $1", [name])
            announce("queues")
          end
        end

        # Deletes a queue's jobs, batch items waiting for it included, releasing the unique jobs'
        # locks.
        # @returns [Integer] how many jobs it deleted.
        def clear_queue(name)
          clear_where("state IN ('queued', 'batching') AND queue = $1", [name])
        end

        # Deletes every queue's jobs, releasing the unique jobs' locks.
        def clear_all_queues
          clear_where("state IN ('queued', 'batching')", [])
        end

        # Empties the scheduled, retry or dead set, releasing the unique jobs' locks.
        # @returns [Integer] how many jobs it held.
        def clear_set(set) = clear_where("state = $1", [set_state(set)])

        def reset_counter(counter)
          unless COUNTERS.include?(counter.to_s)
            raise ArgumentError,
              "unknown counter #{counter.inspect}; use one of #{COUNTERS}"
          end
          with do
            @db.query("DELETE FROM @.counters WHERE name = $1", [counter.to_s])
          end
        end

        # Deletes the jobs, the registry and the flow state (part of Store::Postgres#clear_all).
        # Recurring tasks lose their claimed ticks, last runs and switches, but keep the settings
        # servers recorded when they started (they still run them).
        def clear_jobs_and_processes
          write do
            CLEARED.each { |table| @db.query("DELETE FROM @.#{table}") }
            @db.query("DELETE FROM @.recurring_tasks WHERE definition IS NULL")
            @db.query(
              "UPDATE @.recurring_tasks " \
              "SET tick = NULL, last_run = NULL, disabled = false"
            )
          end
        end

        private

        # Deletes jobs and, in the same transaction, the locks they hold, as deleting one of them
        # does.
        def clear_where(where, values)
          write do
            @db.query(format(HELD_LOCKS, where), values)
            @db.change("DELETE FROM @.jobs WHERE #{where}", values)
          end
        end

        # The ids and payloads of the entries found, each once.
        def entry_rows(set, entries)
          state = set_state(set)
          entries.filter_map do |score, jid|
            @db.query(ENTRY, [state, score, jid]).first
          end.uniq
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # The acting side of the admin role of the SQLite store, used by the Cleaner and the web dashboard: deletes,
      # moves, pauses and clears, each in one transaction.
      module AdminActions
        BY_ENTRY = "state = ? AND run_at = ? AND json_valid(payload) " \
          "AND json_extract(payload, '$.jid') = ?"
        # The locks held by the unique jobs that a clear deletes (each only if that job holds it).
        HELD_LOCKS = "DELETE FROM unique_locks WHERE (lock, jid) IN " \
          "(SELECT json_extract(payload, '$.unique.lock'), " \
          "json_extract(payload, '$.jid') FROM jobs WHERE %s " \
          "AND instr(payload, '\"unique\"') > 0 AND json_valid(payload))"
        private_constant :BY_ENTRY, :HELD_LOCKS

        # Deletes entries of a set. @parameter entries [Array([Float, String])] score and jid of each.
        # @returns [Integer] how many were deleted.
        def delete_set_entries(set, entries)
          write do |db|
            ids = entry_ids(db, set, entries)
            if ids.any?
              db.delete_where("id IN (#{(["?"] * ids.size).join(", ")})", ids)
            end
            ids.size
          end
        end

        # Moves entries of a set where the block says, now.
        # @yields {|from, payload| ...} the set and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_set_entries(set, entries, now: Time.now.to_f, &destination)
          write do |db|
            rows = entry_rows(db, set, entries)
            rows.each do |id, payload|
              enqueue_one(
                db,
                id,
                set_state(set).to_sym,
                payload,
                now,
                &destination
              )
            end
            count(db, "pushes", rows.size) if rows.any?
            rows.size
          end
        end

        # Moves entries of the scheduled or retry set to the dead set, scored `now`.
        # @yields {|payload| ...} an entry; returns the payload to store in the dead set (JobRules.killed).
        # @returns [Integer] how many moved.
        # @raises [ArgumentError] for the dead set.
        def kill_set_entries(set, entries, now: Time.now.to_f)
          if set_state(set) == "dead"
            raise ArgumentError,
              "only scheduled and retry entries can be killed " \
              "(got #{set.inspect})"
          end
          write do |db|
            entry_rows(db, set, entries).each do |id, payload|
              db.execute(
                "UPDATE jobs SET state = 'dead', run_at = ?, payload = ? " \
                "WHERE id = ?",
                [now, yield(payload), id]
              )
              db.add_event(id, {"type" => "dead"}, at: now)
            end.size
          end
        end

        # Deletes one job waiting in a queue. @parameter payload [String] as queue_entries returned it.
        # @returns [Boolean] whether it was there.
        def delete_queue_entry(name, payload)
          write do |db|
            id = db.get_first_value(
              "SELECT id FROM jobs WHERE state = 'queued' AND queue = ? " \
              "AND payload = ? ORDER BY run_at, id LIMIT 1",
              [name, payload]
            )
            db.delete_where("id = ?", [id]) if id
            !id.nil?
          end
        end

        # Stops servers from fetching from a queue; jobs are still pushed to it.
        def pause_queue(name)
          write do |db|
            db.execute(
              "INSERT OR IGNORE INTO paused_queues (queue) VALUES (?)",
              [name]
            )
          end
        end

        # Lets servers fetch from a paused queue again, waking idle ones.
        def resume_queue(name)
          write do |db|
            db.execute("DELETE FROM paused_queues WHERE queue = ?", [name])
            count(db, "pushes", 1)
          end
        end

        # Deletes a queue's jobs, batch items waiting for it included, releasing the unique jobs' locks.
        # @returns [Integer] how many jobs it deleted.
        def clear_queue(name)
          clear_where("state IN ('queued', 'batching') AND queue = ?", [name])
        end

        # Deletes every queue's jobs, releasing the unique jobs' locks.
        def clear_all_queues
          clear_where("state IN ('queued', 'batching')", [])
        end

        # Empties the scheduled, retry or dead set, releasing the unique jobs' locks.
        # @returns [Integer] how many jobs it held.
        def clear_set(set) = clear_where("state = ?", [set_state(set)])

        def reset_counter(counter)
          unless COUNTERS.include?(counter.to_s)
            raise ArgumentError,
              "unknown counter #{counter.inspect}; use one of #{COUNTERS}"
          end
          write do |db|
            db.execute("DELETE FROM counters WHERE name = ?", [counter.to_s])
          end
        end

        # Deletes the jobs (in flight too), their history, the registry, paused queues, unique locks, concurrency slots
        # (and jobs waiting for one) and rate windows (part of Store::SQLite#clear_all). Recurring tasks lose their
        # claimed ticks, last runs and switches, but keep the settings servers recorded when they started (they still
        # run them).
        def clear_jobs_and_processes
          write do |db|
            %w[
              events jobs processes paused_queues results unique_locks
              limit_slots limit_keys rate_starts rate_plan
            ].each do |table|
              db.execute("DELETE FROM #{table}")
            end
            db.execute("DELETE FROM recurring_tasks WHERE definition IS NULL")
            db.execute(
              "UPDATE recurring_tasks " \
              "SET tick = NULL, last_run = NULL, disabled = 0"
            )
            # The announcement counters stay: listeners compare them with what they saw last.
            db.execute(
              "DELETE FROM counters " \
              "WHERE name NOT IN ('pushes', 'schedules', 'cancels')"
            )
          end
        end

        private

        # Deletes jobs and, in the same transaction, the locks they hold, as deleting one of them does.
        def clear_where(where, values)
          write do |db|
            db.execute(format(HELD_LOCKS, where), values)
            db.delete_where(where, values)
          end
        end

        # The ids and payloads of the entries found, each once.
        def entry_rows(db, set, entries)
          entries.filter_map do |score, jid|
            db.get_first_row(
              "SELECT id, payload FROM jobs WHERE #{BY_ENTRY}",
              [set_state(set), score, jid]
            )
          end.uniq
        end

        def entry_ids(db, set, entries)
          entry_rows(db, set, entries).map(&:first)
        end
      end
    end
  end
end

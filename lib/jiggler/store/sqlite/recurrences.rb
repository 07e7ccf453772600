# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Recurring tasks in SQLite (see ../contract.md, "Recurring tasks"): one row per task in recurring_tasks. A tick
      # is claimed by an UPDATE that only matches a later tick, in the transaction that inserts its job, so each tick
      # is enqueued once however many servers ask.
      module Recurrences
        # Records the tasks servers run, for the dashboard; tasks no longer named are hidden (their state stays).
        # @parameter definitions [Hash(String, String)] task name => its settings as JSON.
        def save_recurring(definitions)
          write do |db|
            db.execute("UPDATE recurring_tasks SET definition = NULL")
            definitions.each do |name, json|
              db.execute(
                "INSERT INTO recurring_tasks (name, definition) " \
                "VALUES (?, ?) ON CONFLICT (name) " \
                "DO UPDATE SET definition = excluded.definition",
                [name, json]
              )
            end
          end
        end

        # The recorded tasks. @returns [Array([String, String, Float | Nil, Boolean])] name, settings JSON, last run
        # time and whether enabled, by name.
        def recurring_tasks
          with do |db|
            db.execute(
              "SELECT name, definition, last_run, disabled " \
              "FROM recurring_tasks WHERE definition IS NOT NULL ORDER BY name"
            ).map do |name, json, last_run, disabled|
              [name, json, last_run, disabled.zero?]
            end
          end
        end

        # Claims a task's tick and pushes its job, in one transaction; a unique job takes its lock in it too.
        # @parameter tick [Integer] epoch seconds; nil runs the job now, whatever the tick and the task's state.
        # @parameter unique [Array(String, String, Numeric) | Nil] a unique job's lock name, jid and ttl (seconds).
        # @returns [Boolean | Nil] whether the job was pushed: false when the task is disabled or the tick already
        #   claimed; nil when the tick was claimed but another job holds the lock.
        def enqueue_recurring(
          task,
          tick,
          queue,
          payload,
          now: Time.now.to_f,
          unique: nil
        )
          write do |db|
            db.execute(
              "INSERT OR IGNORE INTO recurring_tasks (name) VALUES (?)",
              [task]
            )
            if tick
              db.execute(
                "UPDATE recurring_tasks SET tick = ? " \
                "WHERE name = ? AND disabled = 0 " \
                "AND (tick IS NULL OR tick < ?)",
                [tick, task, tick]
              )
              next false if db.changes.zero?
            end
            # the claim stays: the tick is done
            next nil if unique && !take_lock(db, *unique, Time.now.to_f)
            db.execute(
              "UPDATE recurring_tasks SET last_run = ? WHERE name = ?",
              [now, task]
            )
            ids = insert(db, "queued", [[queue, now, payload]], "enqueued")
            db.add_event(
              ids.first,
              {"type" => "recurring", "task" => task, "tick" => tick},
              at: now
            )
            count(db, "pushes", 1)
            true
          end
        end

        # Turns a task's ticks on or off for every server.
        def enable_recurring(task, enabled)
          write do |db|
            db.execute(
              "INSERT INTO recurring_tasks (name, disabled) VALUES (?, ?) " \
              "ON CONFLICT (name) DO UPDATE SET disabled = excluded.disabled",
              [task, enabled ? 0 : 1]
            )
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Recurring tasks in PostgreSQL (see ../contract.md, "Recurring tasks"): one row per task in
      # recurring_tasks. A tick is claimed by an UPDATE that only matches a later tick, in the
      # transaction that inserts its job, so each tick is enqueued once however many servers ask
      # (the row lock orders racing claims).
      module Recurrences
        # Records the tasks servers run, for the dashboard; tasks no longer named are hidden (their
        # state stays).
        # @parameter definitions [Hash(String, String)] task name => its settings as JSON.
        def save_recurring(definitions)
          write do
            @db.query("UPDATE @.recurring_tasks SET definition = NULL")
            definitions.each do |name, json|
              @db.query(
                "INSERT INTO @.recurring_tasks (name, definition) " \
                "VALUES ($1, $2) ON CONFLICT (name) DO UPDATE " \
                "SET definition = excluded.definition",
                [name, json]
              )
            end
          end
        end

        # The recorded tasks. @returns [Array([String, String, Float | Nil, Boolean])] name,
        # settings JSON, last run time and whether enabled, by name.
        def recurring_tasks
          rows = with do
            @db.query(
              "SELECT name, definition, last_run, disabled " \
              "FROM @.recurring_tasks " \
              "WHERE definition IS NOT NULL ORDER BY name"
            )
          end
          rows.map do |name, json, last_run, disabled|
            [name, json, last_run, !disabled]
          end
        end

        # Claims a task's tick and pushes its job, in one transaction; a unique job takes its lock
        # in it too.
        # @parameter tick [Integer] epoch seconds; nil runs the job now, whatever the tick and the
        #   task's state.
        # @parameter unique [Array(String, String, Numeric) | Nil] a unique job's lock name, jid and
        #   ttl (seconds).
        # @returns [Boolean | Nil] whether the job was pushed: false when the task is disabled or
        #   the tick already claimed; nil when the tick was claimed but another job holds the lock.
        def enqueue_recurring(
          task,
          tick,
          queue,
          payload,
          now: Time.now.to_f,
          unique: nil
        )
          write do
            @db.query(
              "INSERT INTO @.recurring_tasks (name) VALUES ($1) " \
              "ON CONFLICT DO NOTHING",
              [task]
            )
            next false if tick && !claim_tick(task, tick)
            # The claim stays when the lock is held: the tick is done.
            next nil if unique && !take_lock(*unique, Time.now.to_f)
            @db.query(
              "UPDATE @.recurring_tasks SET last_run = $1 WHERE name = $2",
              [now, task]
            )
            insert("queued", [[queue, now, payload]])
            announce("queues")
            true
          end
        end

        # Turns a task's ticks on or off for every server.
        def enable_recurring(task, enabled)
          with do
            @db.query(
              "INSERT INTO @.recurring_tasks (name, disabled) " \
              "VALUES ($1, $2) ON CONFLICT (name) DO UPDATE " \
              "SET disabled = excluded.disabled",
              [task, !enabled]
            )
          end
        end

        private

        def claim_tick(task, tick)
          @db.change(
            "UPDATE @.recurring_tasks SET tick = $1 " \
            "WHERE name = $2 AND NOT disabled " \
            "AND (tick IS NULL OR tick < $1)",
            [tick, task]
          ) == 1
        end
      end
    end
  end
end

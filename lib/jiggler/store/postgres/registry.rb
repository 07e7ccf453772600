# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # The process registry of the PostgreSQL store: a row per process with its description and the
      # time its registration expires unless it beats again. A row that expired is a dead process.
      module Registry
        # Registers a live process, or refreshes its registration.
        def beat(process, info, ttl)
          with do
            @db.query(
              "INSERT INTO @.processes (id, info, expires_at) " \
              "VALUES ($1, $2, $3) " \
              "ON CONFLICT (id) DO UPDATE " \
              "SET info = excluded.info, expires_at = excluded.expires_at",
              [process, info, now + ttl]
            )
          end
        end

        def unregister(process)
          with { @db.query("DELETE FROM @.processes WHERE id = $1", [process]) }
        end

        # The registered processes whose registration expired. @returns [Array(String)]
        def dead_processes
          with do
            @db.query(
              "SELECT id FROM @.processes WHERE expires_at <= $1 ORDER BY id",
              [now]
            ).flatten
          end
        end

        # Drops a dead process from the registry once it holds no job in flight.
        def forget(process)
          with do
            @db.change(
              "DELETE FROM @.processes WHERE id = $1 AND expires_at <= $2 " \
              "AND NOT EXISTS " \
              "(SELECT 1 FROM @.jobs WHERE owner = $1 AND state = 'in_flight')",
              [process, now]
            ) == 1
          end
        end

        # @returns [Hash(String, String)] live process ids to their JSON descriptions.
        def processes
          with do
            @db.query(
              "SELECT id, info FROM @.processes " \
              "WHERE expires_at > $1 ORDER BY id",
              [now]
            ).to_h
          end
        end

        # Forgets every registered process; jobs held by processes that are gone go back to their
        # queues first.
        def clear_processes
          dead_processes.each { |process| requeue(process) }
          with { @db.query("DELETE FROM @.processes") }
        end

        private

        def now = Time.now.to_f
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # The process registry of the SQLite store: a row per process with its description and the time its
      # registration expires unless it beats again. A row that expired is a dead process.
      module Registry
        # Registers a live process, or refreshes its registration.
        def beat(process, info, ttl)
          write do |db|
            db.execute(
              "INSERT INTO processes (id, info, expires_at) VALUES (?, ?, ?) " \
              "ON CONFLICT (id) DO UPDATE SET info = excluded.info, " \
              "expires_at = excluded.expires_at",
              [process, info, Time.now.to_f + ttl]
            )
          end
        end

        def unregister(process)
          write do |db|
            db.execute("DELETE FROM processes WHERE id = ?", [process])
          end
        end

        # The registered processes whose registration expired. @returns [Array(String)]
        def dead_processes
          # Read in a write transaction, so that it waits for another writer's lock as heartbeats do: while a lock
          # holds every heartbeat back, registrations expire without their processes dying, and a reaper that waited
          # too takes the expiries it then sees with the grace it gives any outage (Reaper#registrations_trusted?).
          write do |db|
            db.execute(
              "SELECT id FROM processes WHERE expires_at <= ?",
              [Time.now.to_f]
            ).flatten
          end
        end

        # Drops a dead process from the registry once it holds no job in flight.
        def forget(process)
          write do |db|
            db.execute(
              "DELETE FROM processes WHERE id = ? AND expires_at <= ? " \
              "AND NOT EXISTS " \
              "(SELECT 1 FROM jobs WHERE owner = ? AND state = 'in_flight')",
              [process, Time.now.to_f, process]
            )
            db.changes == 1
          end
        end

        # @returns [Hash(String, String)] live process ids to their JSON descriptions.
        def processes
          with do |db|
            db.execute(
              "SELECT id, info FROM processes " \
              "WHERE expires_at > ? ORDER BY id",
              [Time.now.to_f]
            ).to_h
          end
        end

        # Forgets every registered process; jobs held by processes that are gone go back to their queues first.
        def clear_processes
          dead_processes.each { |process| requeue(process) }
          write { |db| db.execute("DELETE FROM processes") }
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../../sqlite_file"

module Jiggler
  module Store
    class SQLite
      # The store's connection to its file (SCHEMA's tables), with the writes about job history that several roles
      # make. Each job's history is kept as events in their own table, one row per event.
      class Database < SQLiteFile::Connection
        EVENTS_PER_INSERT = 300
        CODER = SQLiteFile::JSON_CODER
        private_constant :EVENTS_PER_INSERT, :CODER

        # Runs the block in a write transaction, taken at once so that two writers never deadlock; inside one, just
        # runs it.
        def write(&block)
          return yield if transaction_active?
          transaction(:immediate, &block)
        end

        # Records an event inside the caller's transaction.
        def add_event(id, event, at: Time.now.to_f)
          execute(
            "INSERT INTO events (job_id, at, event) VALUES (?, ?, ?)",
            [id, at, CODER.dump(event)]
          )
        end

        # Records events for many jobs, inside the caller's transaction.
        # @parameter events [Array([Integer, Object])] job id and event.
        def add_events(events, at: Time.now.to_f)
          events.each_slice(EVENTS_PER_INSERT) do |slice|
            execute(
              "INSERT INTO events (job_id, at, event) VALUES " \
              "#{(["(?, ?, ?)"] * slice.size).join(", ")}",
              slice.flat_map { |id, event| [id, at, CODER.dump(event)] }
            )
          end
        end

        # A job's history, oldest first. @returns [Array([Float, Hash])] time and event.
        def events(id)
          execute(
            "SELECT at, event FROM events WHERE job_id = ? ORDER BY id",
            [id]
          ).map do |at, event|
            [at, CODER.load(event)]
          end
        end

        # Deletes the jobs matching an SQL condition, with their history, inside the caller's transaction.
        # @parameter where [String] a condition on the jobs table, with `?` for each of `values`.
        # @returns [Integer] how many jobs were deleted.
        def delete_where(where, values)
          execute(
            "DELETE FROM events WHERE job_id IN " \
            "(SELECT id FROM jobs WHERE #{where})",
            values
          )
          execute("DELETE FROM jobs WHERE #{where}", values)
          changes
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../../sqlite_file"

module Jiggler
  module Store
    class SQLite
      # The store's connection to its file (SCHEMA's tables), with each job's history (SQLiteFile::Events) and the
      # deletes several roles make.
      class Database < SQLiteFile::Connection
        include SQLiteFile::Events

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

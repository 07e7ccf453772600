# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Lends the PostgreSQL store the application's own Active Record connection, the one the current thread or fiber
      # holds (`transactional_enqueue`): a job enqueued inside `ActiveRecord::Base.transaction` is written in that
      # transaction, so it exists if and only if the transaction commits. Active Record opens a transaction lazily, at
      # its first statement; asking for the raw connection sends the BEGIN first, so the job's INSERT is inside it.
      module ActiveRecordConnection
        module_function

        # @yields {|connection| ...} the PG::Connection under the current Active Record connection.
        def with_connection
          ::ActiveRecord::Base.connection_pool.with_connection do |connection|
            yield connection.raw_connection
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

require "sqlite3"

module Jiggler
  module SQLiteFile
    # An SQLite connection that keeps its prepared statements: the store runs the same few statements for every
    # batch of jobs, and preparing them again each time costs more than running them.
    class Connection < SQLite3::Database
      CACHE_SIZE = 256
      # Another process's lock is tried every millisecond for the first tries (a lock held for a write lasts about
      # that long), then every 20 ms.
      SHORT_LOCK_TRIES = 50
      LONG_LOCK_PAUSE = 0.02

      # Waits up to `seconds` for another process's lock, sleeping in Ruby so other fibers and threads run meanwhile.
      # sqlite3's busy_handler_timeout tries every millisecond however long the lock is held, which kept each waiting
      # loop busy through a long lock (a backup, a migration, a long write of another program).
      def wait_for_locks(seconds)
        deadline = nil
        busy_handler do |tries|
          now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          if tries.zero? # the first retry comes at once
            deadline = now + seconds
          elsif now > deadline
            next false
          else
            sleep((tries < SHORT_LOCK_TRIES) ? 0.001 : LONG_LOCK_PAUSE)
          end
          true
        end
      end

      # Runs a statement like SQLite3::Database#execute, preparing it once.
      # @returns [Array(Array)] the rows.
      def execute(sql, bind_vars = [], &block)
        statement = prepared(sql)
        statement.reset!
        # a placeholder left unbound must not keep the last call's value
        statement.clear_bindings!
        statement.bind_params(bind_vars)
        rows = build_result_set(statement)
        block ? rows.each(&block) : rows.to_a
      end

      # The first value of the first row, through the same cache (SQLite3::Database#get_first_value prepares the
      # statement again on every call).
      def get_first_value(sql, bind_vars = [])
        execute(sql, bind_vars).first&.first
      end

      def close
        @statements&.each_value(&:close)
        @statements = nil
        super
      end

      private

      def prepared(sql)
        @statements ||= {}
        @statements[sql] ||= begin
          # Statements that differ only in how many ids they list add up; start over rather than grow without end.
          @statements.shift[1].close while @statements.size >= CACHE_SIZE
          prepare(sql)
        end
      end
    end
  end
end

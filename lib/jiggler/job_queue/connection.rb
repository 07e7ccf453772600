# frozen_string_literal: true

require "sqlite3"

module Jiggler
  class JobQueue
    # An SQLite connection that keeps its prepared statements: the store runs the same few statements for every
    # batch of jobs, and preparing them again each time costs more than running them.
    class Connection < SQLite3::Database
      CACHE_SIZE = 256
      # Longest pause between two tries for another process's lock.
      MAX_LOCK_PAUSE = 0.02

      # Waits up to `seconds` for another process's lock. Like SQLite's own busy handler it tries again soon at
      # first and then less often (up to every 20 ms), but sleeps in Ruby so other fibers and threads run meanwhile:
      # sqlite3's busy_handler_timeout tries every millisecond, which kept each waiting loop busy during a long lock.
      def wait_for_locks(seconds)
        deadline = nil
        busy_handler do |tries|
          now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          deadline = now + seconds if tries.zero?
          next false if now > deadline
          sleep([0.001 * (tries + 1), MAX_LOCK_PAUSE].min)
          true
        end
      end

      # Runs a statement like SQLite3::Database#execute, preparing it once.
      # @returns [Array(Array)] the rows.
      def execute(sql, bind_vars = [], &block)
        statement = prepared(sql)
        statement.reset!
        statement.clear_bindings! # a placeholder left unbound must not keep the last call's value
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

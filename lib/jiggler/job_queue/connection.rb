# frozen_string_literal: true

require "sqlite3"

module Jiggler
  class JobQueue
    # An SQLite connection that keeps its prepared statements: the store runs the same few statements for every
    # batch of jobs, and preparing them again each time costs more than running them.
    class Connection < SQLite3::Database
      CACHE_SIZE = 256

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

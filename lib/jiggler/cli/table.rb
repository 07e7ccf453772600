# frozen_string_literal: true

module Jiggler
  class CLI
    # A plain-text table for a terminal: a header row, then one row per item, columns padded to their widest cell.
    # Columns whose header is in `numeric` are right-aligned.
    class Table
      # @parameter headers [Array(String)]
      # @parameter rows [Array(Array)] cells, shown with `to_s`.
      # @parameter numeric [Array(String)] the headers of right-aligned columns.
      def initialize(headers, rows, numeric: [])
        @headers = headers
        @rows = rows.map { |row| row.map(&:to_s) }
        @right = headers.map { |header| numeric.include?(header) }
      end

      # @returns [String] the lines of the table, each ending with a newline.
      def to_s
        widths = @headers.each_index.map do |index|
          ([@headers] + @rows).map { |row| row[index].length }.max
        end
        ([@headers] + @rows).map { |row| line(row, widths) }.join
      end

      private

      def line(row, widths)
        cells = row.each_with_index.map do |cell, index|
          @right[index] ? cell.rjust(widths[index]) : cell.ljust(widths[index])
        end
        "#{cells.join("  ").rstrip}\n"
      end
    end
  end
end

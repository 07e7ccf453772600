# frozen_string_literal: true

require_relative "../../metrics/counts"

module Jiggler
  module Store
    class Postgres
      # Per-class job metrics: one row per minute, class and field (see Metrics::Counts), added to
      # in place, and the totals under minute 0. Servers add their counts in one statement per
      # heartbeat, and drop the minutes past their retention.
      module Metrics
        TOTAL = 0
        ADD = "INSERT INTO @.metrics AS m (minute, class, field, value) " \
          "SELECT * " \
          "FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[]) " \
          "ON CONFLICT (minute, class, field) " \
          "DO UPDATE SET value = m.value + excluded.value"
        READ = "SELECT minute, class, field, value FROM @.metrics"
        private_constant :TOTAL, :ADD, :READ

        # Adds counts to a minute and to the totals.
        # @parameter minute [Integer] minutes since the epoch.
        # @parameter classes [Hash(String, Jiggler::Metrics::Counts)] by job class.
        # @parameter retention [Numeric] seconds the minute is kept after it ended.
        def add_metrics(minute, classes, retention:)
          rows = classes.flat_map do |name, counts|
            counts.to_fields.flat_map do |field, value|
              [minute, TOTAL].map { |at| [at, name, field, value] }
            end
          end
          write do
            @db.query(ADD, rows.transpose) if rows.any?
            # Minutes are kept `retention` seconds past their end, as on Redis.
            @db.query(
              "DELETE FROM @.metrics WHERE minute > $1 AND minute <= $2",
              [TOTAL, (Time.now.to_i - 60 - retention.ceil).div(60)]
            )
          end
        end

        # The counts of each minute of a period, by class.
        # @returns [Hash(Integer, Hash(String, Jiggler::Metrics::Counts))] minutes with counts only.
        def metrics(first, last)
          rows = with do
            @db.query(
              "#{READ} WHERE minute BETWEEN $1 AND $2 AND minute > $3",
              [first, last, TOTAL]
            )
          end
          rows.group_by(&:first).to_h do |minute, in_minute|
            [minute, metric_classes(in_minute)]
          end
        end

        # The counts since the schema was made, by class. @returns [Hash(String,
        # Jiggler::Metrics::Counts)]
        def metrics_totals
          metric_classes(
            with { @db.query("#{READ} WHERE minute = $1", [TOTAL]) }
          )
        end

        private

        def metric_classes(rows)
          rows.group_by { |row| row[1] }.to_h do |name, class_rows|
            [
              name,
              Jiggler::Metrics::Counts.from_fields(
                class_rows.map { |row| row.last(2) }
              )
            ]
          end
        end
      end
    end
  end
end

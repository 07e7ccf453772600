# frozen_string_literal: true

require_relative "../../metrics/counts"

module Jiggler
  module Store
    class SQLite
      # Per-class job metrics: one row per minute, class and field (see Metrics::Counts), added to in place, and the
      # totals under minute 0. Servers add their counts in one transaction per heartbeat, which also drops the minutes
      # past their retention.
      module Metrics
        TOTAL = 0
        ADD = "INSERT INTO metrics (minute, class, field, value) VALUES (?, ?, ?, ?) " \
          "ON CONFLICT (minute, class, field) DO UPDATE SET value = value + excluded.value"
        private_constant :TOTAL, :ADD

        # Adds counts to a minute and to the totals.
        # @parameter minute [Integer] minutes since the epoch.
        # @parameter classes [Hash(String, Jiggler::Metrics::Counts)] by job class.
        # @parameter retention [Numeric] seconds the minute is kept after it ended.
        def add_metrics(minute, classes, retention:)
          write do |queue_db|
            db = queue_db.db
            classes.each do |name, counts|
              counts.to_fields.each { |field, value| [minute, TOTAL].each { |at| db.execute(ADD, [at, name, field, value]) } }
            end
            # Minutes are kept `retention` seconds past their end, as on Redis: the last one gone ended that long ago.
            db.execute("DELETE FROM metrics WHERE minute > ? AND minute <= ?", [TOTAL, (Time.now.to_i - 60 - retention.ceil).div(60)])
          end
        end

        # Deletes all of the store's data (see Admin#clear_all), the metrics included.
        def clear_all
          super
          write { |queue_db| queue_db.db.execute("DELETE FROM metrics") }
        end

        # The counts of each minute of a period, by class.
        # @returns [Hash(Integer, Hash(String, Jiggler::Metrics::Counts))] minutes with counts only.
        def metrics(first, last)
          rows = with { |db| db.execute("SELECT minute, class, field, value FROM metrics WHERE minute BETWEEN ? AND ? AND minute > ?", [first, last, TOTAL]) }
          rows.group_by(&:first).to_h { |minute, minute_rows| [minute, metric_classes(minute_rows)] }
        end

        # The counts since the file was made, by class.
        # @returns [Hash(String, Jiggler::Metrics::Counts)]
        def metrics_totals
          metric_classes(with { |db| db.execute("SELECT minute, class, field, value FROM metrics WHERE minute = ?", [TOTAL]) })
        end

        private

        def metric_classes(rows)
          rows.group_by { |row| row[1] }.to_h { |name, class_rows| [name, Jiggler::Metrics::Counts.from_fields(class_rows.map { |row| row.last(2) })] }
        end
      end
    end
  end
end

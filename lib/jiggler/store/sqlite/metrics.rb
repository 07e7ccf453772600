# frozen_string_literal: true

require "set"
require_relative "../../metrics/counts"
require_relative "../../metrics/class_cap"

module Jiggler
  module Store
    class SQLite
      # Per-class job metrics: one row per minute, class and field (see Metrics::Counts), added to in place, and the
      # totals under minute 0, where each tracked class also has a "seen" row: when it last ran. At most
      # Metrics::ClassCap::LIMIT classes are tracked; an idle one leaves the totals. Servers add their counts in one
      # transaction per heartbeat, which also drops the minutes past their retention.
      module Metrics
        TOTAL = 0
        SEEN = "seen"
        CAP = Jiggler::Metrics::ClassCap
        ADD = "INSERT INTO metrics (minute, class, field, value) " \
          "VALUES (?, ?, ?, ?) " \
          "ON CONFLICT (minute, class, field) " \
          "DO UPDATE SET value = value + excluded.value"
        MARK = "INSERT INTO metrics (minute, class, field, value) " \
          "VALUES (#{TOTAL}, ?, '#{SEEN}', ?) " \
          "ON CONFLICT (minute, class, field) " \
          "DO UPDATE SET value = excluded.value"
        private_constant :TOTAL, :SEEN, :CAP, :ADD, :MARK

        # Adds counts to a minute and to the totals, under Metrics::ClassCap's bounds.
        # @parameter minute [Integer] minutes since the epoch.
        # @parameter classes [Hash(String, Jiggler::Metrics::Counts)] by job class.
        # @parameter retention [Numeric] seconds the minute is kept after it ended.
        def add_metrics(minute, classes, retention:)
          now = Time.now.to_i
          write do |db|
            tracked = tracked_classes(db, now)
            classes.each do |name, counts|
              name = tracked_name(db, tracked, name, now)
              counts.to_fields.each do |field, value|
                [minute, TOTAL].each do |at|
                  db.execute(ADD, [at, name, field, value])
                end
              end
            end
            # Minutes are kept `retention` seconds past their end, as on Redis: the last one gone ended that long ago.
            db.execute(
              "DELETE FROM metrics WHERE minute > ? AND minute <= ?",
              [TOTAL, (now - 60 - retention.ceil).div(60)]
            )
          end
        end

        # Deletes the metrics (part of Store::SQLite#clear_all).
        def clear_metrics
          write { |db| db.execute("DELETE FROM metrics") }
        end

        # The counts of each minute of a period, by class.
        # @returns [Hash(Integer, Hash(String, Jiggler::Metrics::Counts))] minutes with counts only.
        def metrics(first, last)
          rows = with do |db|
            db.execute(
              "SELECT minute, class, field, value FROM metrics " \
              "WHERE minute BETWEEN ? AND ? AND minute > ?",
              [first, last, TOTAL]
            )
          end
          rows.group_by(&:first).to_h do |minute, minute_rows|
            [minute, metric_classes(minute_rows)]
          end
        end

        # The counts since the file was made, by class.
        # @returns [Hash(String, Jiggler::Metrics::Counts)]
        def metrics_totals
          metric_classes(
            with do |db|
              db.execute(
                "SELECT minute, class, field, value FROM metrics " \
                "WHERE minute = ?",
                [TOTAL]
              )
            end
          )
        end

        private

        # Drops the classes idle for ClassCap::IDLE from the totals. @returns [Set(String)] the classes still tracked.
        def tracked_classes(db, now)
          idle = "SELECT class FROM metrics " \
            "WHERE minute = #{TOTAL} AND field = '#{SEEN}' AND value < ?"
          db.execute(
            "DELETE FROM metrics " \
            "WHERE minute = #{TOTAL} AND class IN (#{idle})",
            [now - CAP::IDLE]
          )
          db.execute(
            "SELECT class FROM metrics " \
            "WHERE minute = #{TOTAL} AND field = '#{SEEN}'"
          ).flatten.to_set
        end

        # The name a class's runs are counted under: its own when it is tracked or fits, else ClassCap::OTHER.
        def tracked_name(db, tracked, name, now)
          fits = CAP.nameable?(name) &&
            (tracked.include?(name) || tracked.size < CAP::LIMIT)
          return CAP::OTHER unless fits
          tracked << name
          db.execute(MARK, [name, now])
          name
        end

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

# frozen_string_literal: true

require_relative "../../metrics/counts"
require_relative "../../metrics/class_cap"
require_relative "../../metrics/histogram"
require_relative "script"

module Jiggler
  module Store
    class Redis
      # Per-class job metrics: a hash per minute ("<class>|<field>" to a count, see Metrics::Counts) that expires after
      # the retention, a sorted set naming those minutes, one hash of totals, and a sorted set of the classes tracked
      # by when each last ran (at most Metrics::ClassCap::LIMIT; an idle class leaves the totals). Servers add their
      # counts with one script run per heartbeat; the dashboard reads a period with one pipelined round trip.
      module Metrics
        ADD = Script.new("metrics")
        CAP = Jiggler::Metrics::ClassCap
        private_constant :ADD, :CAP

        # Adds counts to a minute and to the totals, under Metrics::ClassCap's bounds.
        # @parameter minute [Integer] minutes since the epoch.
        # @parameter classes [Hash(String, Jiggler::Metrics::Counts)] by job class.
        # @parameter retention [Numeric] seconds the minute is kept after it ended.
        def add_metrics(minute, classes, retention:)
          counted =
            classes.filter_map { |name, counts| metric_argv(name, counts) }
          return if counted.empty?
          now = Time.now.to_i
          # kept `retention` seconds past its end
          expires = minute * 60 + 60 + retention.ceil
          keys = [
            @keys.metrics(minute),
            @keys.metrics("total"),
            @keys.metrics("classes"),
            @keys.metrics("minutes")
          ]
          argv = [
            now,
            now - CAP::IDLE,
            CAP::LIMIT,
            CAP::OTHER,
            Jiggler::Metrics::Histogram::LAST,
            expires,
            *counted.flatten
          ]
          with { |redis| ADD.call(redis, keys, argv) }
        end

        # Deletes the metrics (part of Store::Redis#clear_all).
        def clear_metrics
          with do |redis|
            minutes = redis.call("ZRANGE", @keys.metrics("minutes"), 0, -1)
            redis.call_v([
              "DEL",
              @keys.metrics("total"),
              @keys.metrics("minutes"),
              @keys.metrics("classes"),
              *minutes
            ])
          end
        end

        # The counts of each minute of a period, by class.
        # @parameter first [Integer] the first minute (since the epoch).
        # @parameter last [Integer] the last minute.
        # @returns [Hash(Integer, Hash(String, Jiggler::Metrics::Counts))] minutes with counts only.
        def metrics(first, last)
          minutes = (first..last).to_a
          hashes = with do |redis|
            redis.pipelined do |pipeline|
              minutes.each do |minute|
                pipeline.call("HGETALL", @keys.metrics(minute))
              end
            end
          end
          minutes.zip(hashes).filter_map do |minute, hash|
            [minute, metric_classes(hash)] unless hash.empty?
          end.to_h
        end

        # The counts since the store began, by class.
        # @returns [Hash(String, Jiggler::Metrics::Counts)]
        def metrics_totals
          metric_classes(
            with { |redis| redis.call("HGETALL", @keys.metrics("total")) }
          )
        end

        private

        # A class's part of the script's arguments: its name (OTHER past NAME_MAX), its field count, its fields.
        def metric_argv(name, counts)
          fields = counts.to_fields
          unless fields.empty?
            [
              CAP.nameable?(name) ? name : CAP::OTHER,
              fields.size,
              *fields.flatten
            ]
          end
        end

        def metric_classes(hash)
          hash.group_by { |field, _| field.rpartition("|").first }
            .to_h do |name, pairs|
              [
                name,
                Jiggler::Metrics::Counts.from_fields(
                  pairs.map do |field, value|
                    [field.rpartition("|").last, value]
                  end
                )
              ]
            end
        end
      end
    end
  end
end

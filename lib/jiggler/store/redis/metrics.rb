# frozen_string_literal: true

require_relative "../../metrics/counts"

module Jiggler
  module Store
    class Redis
      # Per-class job metrics: a hash per minute ("<class>|<field>" to a count, see Metrics::Counts) that expires after
      # the retention, a sorted set naming those minutes, and one hash of totals that never expires. Servers add their counts with one pipelined round trip
      # per heartbeat; the dashboard reads a period with one more.
      module Metrics
        # Adds counts to a minute and to the totals.
        # @parameter minute [Integer] minutes since the epoch.
        # @parameter classes [Hash(String, Jiggler::Metrics::Counts)] by job class.
        # @parameter retention [Numeric] seconds the minute is kept after it ended.
        def add_metrics(minute, classes, retention:)
          fields = classes.flat_map { |name, counts| counts.to_fields.map { |field, value| ["#{name}|#{field}", value] } }
          return if fields.empty?
          key = @keys.metrics(minute)
          with do |redis|
            redis.pipelined do |pipeline|
              fields.each do |field, value|
                pipeline.call("HINCRBY", key, field, value)
                pipeline.call("HINCRBY", @keys.metrics("total"), field, value)
              end
              expires = minute * 60 + 60 + retention.ceil # kept `retention` seconds past its end
              pipeline.call("EXPIREAT", key, expires)
              # The minutes kept, by expiry, so that clear_all finds them without walking the keyspace.
              pipeline.call("ZADD", @keys.metrics("minutes"), expires, key)
              pipeline.call("ZREMRANGEBYSCORE", @keys.metrics("minutes"), "-inf", Time.now.to_i)
            end
          end
        end

        # Deletes all of the namespace's data (see Admin#clear_all), the metrics included.
        def clear_all
          super
          with do |redis|
            minutes = redis.call("ZRANGE", @keys.metrics("minutes"), 0, -1)
            redis.call_v(["DEL", @keys.metrics("total"), @keys.metrics("minutes"), *minutes])
          end
        end

        # The counts of each minute of a period, by class.
        # @parameter first [Integer] the first minute (since the epoch).
        # @parameter last [Integer] the last minute.
        # @returns [Hash(Integer, Hash(String, Jiggler::Metrics::Counts))] minutes with counts only.
        def metrics(first, last)
          minutes = (first..last).to_a
          hashes = with { |redis| redis.pipelined { |pipeline| minutes.each { |minute| pipeline.call("HGETALL", @keys.metrics(minute)) } } }
          minutes.zip(hashes).filter_map { |minute, hash| [minute, metric_classes(hash)] unless hash.empty? }.to_h
        end

        # The counts since the store began, by class.
        # @returns [Hash(String, Jiggler::Metrics::Counts)]
        def metrics_totals = metric_classes(with { |redis| redis.call("HGETALL", @keys.metrics("total")) })

        private

        def metric_classes(hash)
          hash.group_by { |field, _| field.rpartition("|").first }.to_h do |name, pairs|
            [name, Jiggler::Metrics::Counts.from_fields(pairs.map { |field, value| [field.rpartition("|").last, value] })]
          end
        end
      end
    end
  end
end

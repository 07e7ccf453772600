# frozen_string_literal: true

require_relative "histogram"
require_relative "counts"
require_relative "class_cap"

module Jiggler
  module Metrics
    # The per-class metrics of a period, as the dashboard's Metrics page shows them: for each class its runs, failures,
    # total time and percentiles over the period, and its counts minute by minute (at most ClassCap::LIMIT classes a
    # minute, the rest under ClassCap::OTHER). Reads the store once.
    class Report
      # One class over the period: finished and failed runs, seconds spent, and percentiles in seconds (nil without
      # runs).
      Row = Struct.new(:name, :processed, :failed, :seconds, :p50, :p95, :p99)

      attr_reader :first, :last

      # @parameter store [Store::Redis | Store::SQLite]
      # @parameter minutes [Integer] how long the period is, ending with the current minute.
      # @parameter now [Integer] epoch seconds.
      def initialize(store, minutes:, now: Time.now.to_i)
        @last = now / 60
        @first = @last - minutes + 1
        # Each minute within ClassCap's bounds, whatever was stored before them.
        @minutes = store.metrics(@first, @last)
          .transform_values { |classes| ClassCap.fold(classes) }
      end

      # Every class that ran in the period.
      # @returns [Array(Row)] by class name.
      def rows
        @rows ||= totals.sort.map do |name, counts|
          Row.new(
            name,
            counts.processed,
            counts.failed,
            counts.micros / 1_000_000.0,
            *[0.5, 0.95, 0.99].map do |fraction|
              Histogram.percentile(counts.buckets, fraction)
            end
          )
        end
      end

      # A class's counts minute by minute, for its chart.
      # @returns [Array(Counts)] one per minute of the period, oldest first (zero where it did not run).
      def series(name)
        (@first..@last).map do |minute|
          @minutes.dig(minute, name) || Counts.zero
        end
      end

      private

      def totals
        @minutes.each_value.with_object({}) do |classes, totals|
          classes.each do |name, counts|
            (totals[name] ||= Counts.zero).add(counts)
          end
        end
      end
    end
  end
end

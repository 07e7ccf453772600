# frozen_string_literal: true

module Jiggler
  module Metrics
    # What was counted for one job class over some time: runs that succeeded, runs that failed, their total duration in
    # microseconds, and runs by Histogram bucket. Stores keep it as named fields ("p", "f", "us", "h<bucket>"), which
    # they add to in place, so counts from every process and flush add up.
    Counts = Struct.new(:processed, :failed, :micros, :buckets) do
      # Empty counts.
      def self.zero = new(0, 0, 0, Hash.new(0))

      # Counts from stored fields; unknown fields are ignored.
      # @parameter fields [Enumerable([String, Numeric])]
      def self.from_fields(fields)
        fields.each_with_object(zero) do |(field, value), counts|
          value = value.to_i
          case field
          when "p" then counts.processed += value
          when "f" then counts.failed += value
          when "us" then counts.micros += value
          when /\Ah(\d+)\z/ then counts.buckets[$1.to_i] += value
          end
        end
      end

      # @returns [Hash(String, Integer)] the stored fields, without those that are zero.
      def to_fields
        fields = {"p" => processed, "f" => failed, "us" => micros}
          .reject { |_, value| value.zero? }
        buckets.each do |index, count|
          fields["h#{index}"] = count unless count.zero?
        end
        fields
      end

      # Adds other counts to these. @returns [Counts] self.
      def add(other)
        self.processed += other.processed
        self.failed += other.failed
        self.micros += other.micros
        other.buckets.each { |index, count| buckets[index] += count }
        self
      end

      # Runs counted, failed ones included.
      def runs = processed + failed
    end
  end
end

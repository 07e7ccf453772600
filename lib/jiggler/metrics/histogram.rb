# frozen_string_literal: true

module Jiggler
  module Metrics
    # The fixed buckets of job durations: bucket 0 holds runs of up to 0.1 ms, each next one ends 2^(1/8) (about 9%)
    # later, up to about 105 s; the last bucket holds longer runs. Fine enough that a percentile read from the counts
    # is within about 5% of the true one, and the same in every process, so counts from anywhere add up.
    module Histogram
      FIRST = 0.0001
      PER_DOUBLING = 8
      # Upper bounds in seconds; a run longer than the last falls in the bucket after it.
      BOUNDS = Array.new(20 * PER_DOUBLING + 1) do |index|
        FIRST * 2**(index.to_f / PER_DOUBLING)
      end.freeze
      LAST = BOUNDS.size

      module_function

      # The bucket of a duration.
      # @parameter seconds [Float]
      # @returns [Integer] 0 to LAST.
      def index(seconds)
        return 0 if seconds <= FIRST
        (Math.log2(seconds / FIRST) * PER_DOUBLING).ceil.clamp(0, LAST)
      end

      # A percentile read from bucket counts, interpolating inside its bucket as Prometheus' histogram_quantile does.
      # @parameter counts [Hash(Integer, Integer)] runs by bucket.
      # @parameter fraction [Float] 0.5 for the median, 0.95, 0.99.
      # @returns [Float | Nil] seconds; nil without runs.
      def percentile(counts, fraction)
        total = counts.sum { |_, count| count }
        return nil if total.zero?
        rank = fraction * total
        seen = 0
        counts.sort.each do |index, count|
          next seen += count if seen + count < rank
          return BOUNDS.last if index >= LAST
          lower = index.zero? ? 0.0 : BOUNDS[index - 1]
          return lower + (BOUNDS[index] - lower) * (rank - seen) / count
        end
        BOUNDS.last
      end
    end
  end
end

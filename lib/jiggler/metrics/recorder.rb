# frozen_string_literal: true

require_relative "histogram"
require_relative "counts"

module Jiggler
  module Metrics
    # Counts the runs of each job class in memory: succeeded and failed runs, their total duration and a histogram of
    # durations. Worker fibers record every run on the reactor's thread with a few Array updates and no lock; a task
    # of that thread hands what was counted over (`hand_over`, every HAND_OVER_INTERVAL seconds and at stop) through a
    # Thread::Queue to the heartbeat thread, which takes it and writes it to the store.
    class Recorder
      # Seconds between hand-overs: counts reach the store within this and one heartbeat.
      HAND_OVER_INTERVAL = 1.0
      # Per class: [processed, failed, seconds, then one count per Histogram bucket].
      BUCKETS = 3
      private_constant :BUCKETS

      def initialize
        @classes = {}
        @handed = Thread::Queue.new
      end

      # Counts one run. Called only on the thread that calls `hand_over`.
      # @parameter name [String] the job class.
      # @parameter seconds [Float] how long it ran.
      # @parameter failed [Boolean]
      def record(name, seconds, failed)
        counts = @classes[name] ||= Array.new(BUCKETS + Histogram::LAST + 1, 0)
        counts[failed ? 1 : 0] += 1
        counts[2] += seconds
        counts[BUCKETS + Histogram.index(seconds)] += 1
      end

      # Hands what was counted since the last hand-over to `take`.
      def hand_over
        return if @classes.empty?
        @handed << @classes.transform_values { |counts| to_counts(counts) }
        @classes = {}
      end

      # Takes what was handed over since the last take. Safe from any thread.
      # @returns [Hash(String, Counts)] by class; empty when nothing ran.
      def take
        taken = {}
        while (handed = next_handed)
          handed.each do |name, counts|
            (taken[name] ||= Counts.zero).add(counts)
          end
        end
        taken
      end

      # Puts back counts that could not be written, to go with the next take. Safe from any thread.
      # @parameter taken [Hash(String, Counts)]
      def restore(taken)
        @handed << taken unless taken.empty?
      end

      private

      def to_counts(counts)
        buckets = Hash.new(0)
        counts.each_with_index do |count, index|
          if index >= BUCKETS && count.positive?
            buckets[index - BUCKETS] = count
          end
        end
        Counts.new(counts[0], counts[1], (counts[2] * 1_000_000).round, buckets)
      end

      def next_handed
        @handed.pop(true)
      rescue ThreadError # empty
        nil
      end
    end
  end
end

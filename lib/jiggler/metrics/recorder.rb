# frozen_string_literal: true

require_relative "histogram"
require_relative "counts"

module Jiggler
  module Metrics
    # Counts the runs of each job class in memory: succeeded and failed runs, their total duration and a histogram of
    # durations. Worker fibers record every run (a few hash updates, no store call); the heartbeat thread takes what
    # was counted and writes it to the store with each beat.
    class Recorder
      def initialize
        @lock = Thread::Mutex.new # worker fibers record while the heartbeat thread takes
        @classes = {}
      end

      # Counts one run.
      # @parameter name [String] the job class.
      # @parameter seconds [Float] how long it ran.
      # @parameter failed [Boolean]
      def record(name, seconds, failed)
        index = Histogram.index(seconds)
        @lock.synchronize do
          counts = @classes[name] ||= Counts.zero
          failed ? counts.failed += 1 : counts.processed += 1
          counts.micros += (seconds * 1_000_000).round
          counts.buckets[index] += 1
        end
      end

      # Takes what was counted since the last take.
      # @returns [Hash(String, Counts)] by class; empty when nothing ran.
      def take
        @lock.synchronize do
          taken = @classes
          @classes = {}
          taken
        end
      end

      # Puts back counts that could not be written, to go with the next take.
      # @parameter taken [Hash(String, Counts)]
      def restore(taken)
        @lock.synchronize do
          taken.each { |name, counts| (@classes[name] ||= Counts.zero).add(counts) }
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "periodic"
require_relative "../batch"
require_relative "../job"

module Jiggler
  module Server
    # Turns waiting batch items into batch jobs once they are due: a full batch is formed at enqueue already, so this
    # catches the batches whose oldest item has waited `batch_interval`. It checks every half of the shortest interval
    # of the batch classes this process loaded (at least every poll_interval), and forms only batches of those classes
    # (it needs their size and interval).
    class Batcher
      # Whether this process loaded any batch class.
      def self.needed? = !Job.shortest_batch_interval.nil?

      # @parameter store [Store::Redis | Store::SQLite] a store for this loop alone.
      # @parameter longest_wait [Numeric] seconds between checks at most (the scheduler's poll_interval).
      def initialize(store:, longest_wait:, logger:)
        @store = store
        @logger = logger
        interval = [Job.shortest_batch_interval / 2.0, longest_wait].min
        @periodic = Periodic.new("batcher", interval: interval, logger: logger, closing: @store) { form_due }
      end

      # @parameter parent [Async::Task]
      def start(parent:) = @periodic.start(parent: parent)

      # Stops after the check in progress, if any, and closes the store.
      # @asynchronous
      def stop = @periodic.stop

      private

      def form_due
        now = Time.now.to_f
        @store.batch_names.each do |queue, name|
          options = batch_options(name) or next
          taken = Batch.form(@store, queue, name, size: options[:batch_size], interval: options[:batch_interval], now: now)
          @logger.debug { "batcher: #{taken} #{name} items batched from #{queue}" } if taken.positive?
        end
      end

      # The options of a loaded batch class, or nil for a class this process does not know.
      def batch_options(name)
        klass = Object.const_get(name)
        klass.job_options if klass.is_a?(Class) && klass.include?(Job) && klass.job_options[:batch_size]
      rescue NameError
        nil
      end
    end
  end
end

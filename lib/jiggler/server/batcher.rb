# frozen_string_literal: true

require_relative "periodic"
require_relative "../batch"
require_relative "../job"

module Jiggler
  module Server
    # Turns waiting batch items into batch jobs once they are due: a full batch is formed at enqueue already, so this
    # catches the batches whose oldest item has waited `batch_interval`. It checks every `interval` seconds (the
    # launcher passes half of the shortest interval of the batch classes this process loaded, at most poll_interval),
    # and forms only batches of the classes this process knows (it needs their size and interval).
    class Batcher
      # @parameter store [Store::Redis | Store::SQLite] a store for this loop alone.
      # @parameter interval [Numeric] seconds between checks.
      def initialize(store:, interval:, logger:)
        @store = store
        @logger = logger
        @periodic = Periodic.new(
          "batcher", interval: interval, logger: logger, closing: @store
        ) { form_due }
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
          taken = Batch.form(
            @store,
            queue,
            name,
            size: options[:batch_size],
            interval: options[:batch_interval],
            now: now
          )
          if taken.positive?
            @logger.debug do
              "batcher: #{taken} #{name} items batched from #{queue}"
            end
          end
        end
      end

      # The options of a loaded batch class, or nil for a class this process does not know.
      def batch_options(name)
        klass = Object.const_get(name)
        if klass.is_a?(Class) &&
            klass.include?(Job) &&
            klass.job_options[:batch_size]
          klass.job_options
        end
      rescue NameError
        nil
      end
    end
  end
end

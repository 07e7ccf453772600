# frozen_string_literal: true

require_relative "periodic"

module Jiggler
  module Server
    # Moves scheduled jobs and due retries to their queues, checking every `interval` seconds.
    class Scheduler
      # @parameter store [Store::Redis | Store::SQLite] a store for this scheduler alone.
      # @parameter interval [Numeric] seconds between checks.
      def initialize(store:, interval:, logger:)
        @store = store
        @periodic = Periodic.new("scheduler", interval: interval, logger: logger, closing: @store) do
          moved = @store.enqueue_due(Time.now.to_f)
          logger.debug { "scheduler: #{moved} due jobs moved to their queues" } if moved.positive?
        end
      end

      # @parameter parent [Async::Task]
      def start(parent:) = @periodic.start(parent: parent)

      # Stops after the check in progress, if any, and closes the store.
      # @asynchronous
      def stop = @periodic.stop
    end
  end
end

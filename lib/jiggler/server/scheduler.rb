# frozen_string_literal: true

require_relative "periodic"
require_relative "../job_rules"

module Jiggler
  module Server
    # Moves scheduled jobs and due retries to their queues. It sleeps until the earliest of them is due, and at most
    # `interval` seconds; a job scheduled sooner than every other is announced by the store, and `wake` (called by the
    # Listener) makes it look again. So scheduled jobs start on time, and an idle server does not poll every second.
    class Scheduler
      # @parameter store [Store::Redis | Store::SQLite] a store for this scheduler alone.
      # @parameter interval [Numeric] seconds between checks at most.
      def initialize(store:, interval:, logger:)
        @store = store
        @periodic = Periodic.new(
          "scheduler",
          interval: interval,
          logger: logger,
          closing: @store,
          sooner: true
        ) do
          now = Time.now.to_f
          moved = @store.enqueue_due(now) do |from, payload|
            JobRules.due(from, payload, now)
          end
          if moved.positive?
            logger.debug do
              "scheduler: #{moved} due jobs moved to their queues"
            end
          end
          next_due = @store.next_due
          next_due - Time.now.to_f if next_due
        end
      end

      # @parameter parent [Async::Task]
      def start(parent:) = @periodic.start(parent: parent)

      # Looks at the scheduled jobs and retries again now: one was scheduled sooner than the others.
      def wake = @periodic.wake

      # Stops after the check in progress, if any, and closes the store.
      # @asynchronous
      def stop = @periodic.stop
    end
  end
end

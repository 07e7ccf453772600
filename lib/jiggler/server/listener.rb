# frozen_string_literal: true

require "async/task"
require_relative "outage"

module Jiggler
  module Server
    # Waits for the store's announcements and wakes whoever they concern: the fetcher when a job was pushed to an
    # empty queue, the scheduler when a job was scheduled sooner than the others. This is what lets an idle server
    # sleep instead of polling; the fetcher's and the scheduler's own polls only catch what an announcement missed.
    class Listener
      # Seconds per read of the subscription: a bound on each wait, not a poll (an announcement between reads waits
      # in the subscription).
      TIMEOUT = 10.0

      # @parameter store [Store::Redis | Store::SQLite] holds the subscription (Redis) or reads the counters (SQLite).
      # @parameter fetcher [Fetcher]
      # @parameter scheduler [Scheduler | Nil] nil when this process does not move scheduled jobs.
      def initialize(store:, fetcher:, scheduler:, logger:)
        @store = store
        @fetcher = fetcher
        @scheduler = scheduler
        @outage = Outage.new("listener", logger)
      end

      # @parameter parent [Async::Task]
      def start(parent:)
        @task = parent.async(annotation: "jiggler.listener") { run }
      end

      def stop = @task&.stop

      private

      def run
        loop do
          wake(@store.wait_for_wake(TIMEOUT))
          @outage.recovered
        rescue => error
          Async::Task.current.sleep(@outage.failed(error))
        end
      end

      def wake(announced)
        @fetcher.pushed if announced == :queues || announced == :any
        @scheduler&.wake if announced == :schedule || announced == :any
      end
    end
  end
end

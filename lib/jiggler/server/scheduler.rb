# frozen_string_literal: true

require "async/notification"
require "async/task"
require "async/clock"
require_relative "outage"

module Jiggler
  module Server
    # Moves scheduled jobs and due retries to their queues, checking every `interval` seconds (start to start).
    class Scheduler
      # @parameter store [Store::Redis] a store for this scheduler alone.
      # @parameter interval [Numeric] seconds between checks.
      def initialize(store:, interval:, logger:)
        @store = store
        @interval = interval
        @logger = logger
        @outage = Outage.new("scheduler", logger)
        @wakeup = Async::Notification.new
        @stopping = false
      end

      # @parameter parent [Async::Task]
      def start(parent:)
        @task = parent.async(annotation: "jiggler.scheduler") { run }
      end

      # Stops after the check in progress, if any.
      # @asynchronous
      def stop
        @stopping = true
        @wakeup.signal
        @task&.wait
        @store.close
      end

      private

      def run
        loop do
          started = Async::Clock.now
          delay = check
          break if @stopping
          wait(delay || (started + @interval - Async::Clock.now))
        end
      end

      # @returns [Float | Nil] a back-off delay after a failure.
      def check
        moved = @store.enqueue_due(Time.now.to_f)
        @logger.debug { "scheduler: #{moved} due jobs moved to their queues" } if moved.positive?
        @outage.recovered
        nil
      rescue => error
        @outage.failed(error)
      end

      def wait(seconds)
        return if seconds <= 0 || @stopping
        Async::Task.current.with_timeout(seconds) { @wakeup.wait }
      rescue Async::TimeoutError
        nil
      end
    end
  end
end

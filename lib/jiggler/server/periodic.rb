# frozen_string_literal: true

require "async/notification"
require "async/task"
require "async/clock"
require_relative "outage"

module Jiggler
  module Server
    # Runs a block every `interval` seconds (start to start) in a task of its own, until stopped. A failing run is
    # logged once per outage and retried with back-off; `stop` cuts the wait short.
    class Periodic
      # @parameter name [String] for the task and the log.
      # @parameter interval [Numeric] seconds between runs.
      # @parameter jitter [Float] each wait is shortened by up to this fraction, so processes drift out of step.
      # @parameter closing [#close | Nil] what to close once stopped: the loop's own store.
      def initialize(name, interval:, logger:, jitter: 0.0, closing: nil, &block)
        @name = name
        @closing = closing
        @interval = interval
        @jitter = jitter
        @block = block
        @outage = Outage.new(name, logger)
        @wakeup = Async::Notification.new
        @stopping = false
      end

      # @parameter parent [Async::Task]
      def start(parent:)
        @task = parent.async(annotation: "jiggler.#{@name}") { run }
      end

      # Stops after the run in progress, if any, then closes `closing`.
      # @asynchronous
      def stop
        @stopping = true
        @wakeup.signal
        @task&.wait
        @closing&.close
      end

      private

      def run
        loop do
          started = Async::Clock.now
          delay = tick
          break if @stopping
          wait(delay || (started + @interval * (1 - rand * @jitter) - Async::Clock.now))
        end
      end

      # @returns [Float | Nil] a back-off delay after a failure.
      def tick
        @block.call
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

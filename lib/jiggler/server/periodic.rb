# frozen_string_literal: true

require "async/notification"
require "async/task"
require "async/clock"
require_relative "outage"

module Jiggler
  module Server
    # Runs a block every `interval` seconds (start to start) in a task of its own, until stopped. A failing run is
    # logged once per outage and retried with back-off; `wake` runs it again at once, `stop` cuts the wait short.
    class Periodic
      # The shortest wait between runs, so that a block asking to run again at once cannot spin.
      MIN_WAIT = 0.01

      # @parameter name [String] for the task and the log.
      # @parameter interval [Numeric] seconds between runs.
      # @parameter jitter [Float] each wait is shortened by up to this fraction, so processes drift out of step.
      # @parameter closing [#close | Nil] what to close once stopped: the loop's own store.
      # @parameter sooner [Boolean] the block returns the seconds until it should run again (or nil), and the loop
      #   waits that long when it is shorter than the interval.
      def initialize(
        name,
        interval:,
        logger:,
        jitter: 0.0,
        closing: nil,
        sooner: false,
        &block
      )
        @name = name
        @closing = closing
        @interval = interval
        @jitter = jitter
        @sooner = sooner
        @block = block
        @outage = Outage.new(name, logger)
        @wakeup = Async::Notification.new
        @woken = false
        @stopping = false
      end

      # @parameter parent [Async::Task]
      def start(parent:)
        @task = parent.async(annotation: "jiggler.#{@name}") { run }
      end

      # Runs the block again now, or as soon as the run in progress ends.
      def wake
        @woken = true
        @wakeup.signal
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

      # A stop during the wait ends the loop there: no run after `stop`.
      def run
        until @stopping
          started = Async::Clock.now
          # a wake during the run below is kept, and cuts the next wait short
          @woken = false
          back_off, sooner = tick
          wait(back_off || next_wait(started, sooner)) unless @stopping
        end
      end

      # @returns [Array(Float | Nil, Numeric | Nil)] a back-off delay after a failure, and the block's own wait.
      def tick
        result = @block.call
        @outage.recovered
        [nil, (result if @sooner)]
      rescue => error
        [@outage.failed(error), nil]
      end

      def next_wait(started, sooner)
        planned = started + @interval * (1 - rand * @jitter) - Async::Clock.now
        sooner ? [sooner, planned].min.clamp(MIN_WAIT..) : planned
      end

      def wait(seconds)
        return if seconds <= 0 || @stopping || @woken
        Async::Task.current.with_timeout(seconds) { @wakeup.wait }
      rescue Async::TimeoutError
        nil
      end
    end
  end
end

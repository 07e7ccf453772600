# frozen_string_literal: true

require_relative "outage"

module Jiggler
  module Server
    # Hears cancel requests (Jiggler.cancel, the dashboard, `jiggler cancel`) as soon as they are made, on a thread of
    # its own with a store of its own, and hands the recent ones to Executions, which stops the named jobs this process
    # runs. A thread, not a fiber: a job that holds the reactor with CPU work still sees `cancelled?` turn true.
    class Cancellations
      # Seconds per wait for an announcement: a bound on each wait (and on `stop`), not a poll of the requests.
      WAIT = 1.0

      # @parameter store [Store::Redis | Store::SQLite] a store on a connection of its own (used from this thread only).
      # @parameter executions [Executions]
      # @parameter logger [Logger]
      def initialize(store:, executions:, logger:)
        @store = store
        @executions = executions
        @logger = logger
        @outage = Outage.new("cancellations", logger)
        @stopping = false
      end

      # Reads the recent requests, then listens for new ones on a background thread.
      def start
        @thread = Thread.new { run }
        @thread.name = "jiggler.cancellations"
      end

      # Stops the thread and closes the store. The thread spends its time waiting for an announcement, so it is
      # ended there rather than waited for (up to WAIT seconds more of every shutdown).
      def stop
        @stopping = true
        @thread&.kill&.join(1)
      ensure
        @store.close
      end

      private

      def run
        until @stopping
          begin
            look if @store.wait_for_cancels(WAIT)
            @outage.recovered
          rescue => error
            sleep(@outage.failed(error))
          end
        end
      end

      def look = @executions.requested(@store.cancel_requests(Time.now.to_f))
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Job
    # One run of a job as its server sees it: the task it runs on, when its timeout ends, whether it was cancelled
    # (and by whom) and the progress it reported. Cancel and timeout stop the task (Async::Stop at the job's next I/O,
    # its `ensure` blocks run) and leave here which of them it was, so the processor can tell them from a shutdown.
    #
    # `cancel` may be called from another thread (the server's Cancellations thread), so that a CPU-bound job that
    # checks `cancelled?` sees it while it holds the reactor; `stop` runs in the reactor.
    class Execution
      # How much of a progress message is kept.
      MESSAGE_LIMIT = 200

      attr_reader :jid, :cancelled_by, :progress

      # @parameter jid [String]
      # @parameter task [Async::Task] the task the job runs on.
      # @parameter timeout [Numeric | Nil] seconds the job may run.
      # positional: one is made for every job, and keywords cost more
      def initialize(jid, task, timeout = nil)
        @jid = jid
        @task = task
        @timeout = timeout
        @deadline = timeout && (monotonic + timeout)
      end

      attr_reader :timeout

      # Marks the job cancelled; `stop` stops it. Safe from any thread.
      # @parameter by [String] who asked.
      def cancel(by) = @cancelled_by ||= by.to_s

      # Stops the job's task for `reason` (:cancel or :timeout), once, while it runs.
      # @asynchronous
      def stop(reason)
        return if @reason || @finished
        @reason = reason
        @task.stop
      end

      # Why the job was ended early: :cancel, :timeout, or nil when nothing but itself ended it (a request that came
      # once it had run to its end is too late).
      def ended_by
        return @reason if @reason || @finished
        return :cancel if @cancelled_by
        :timeout if expired?
      end

      # Whether the job should stop: cancelled, or past its timeout (Job#cancelled?). Noted as seen, so that a job
      # that returns after seeing it ends as cancelled (or timed out), not as a success.
      def cancelled?
        @seen = true if (stopping = !@cancelled_by.nil? || expired?)
        stopping
      end

      # Whether the job saw `cancelled?` true.
      def seen? = @seen == true

      # Records the job's progress, shown on the dashboard within a heartbeat.
      # @parameter fraction [Numeric] from 0.0 to 1.0.
      # @parameter message [String | Nil]
      # @raises [ArgumentError] for a fraction that is not a number from 0 to 1.
      def report(fraction, message = nil)
        unless fraction.is_a?(Numeric) && fraction.to_f.between?(0.0, 1.0)
          raise ArgumentError,
            "progress takes a number from 0.0 to 1.0 (got #{fraction.inspect})"
        end
        @progress = {
          "fraction" => fraction.to_f.round(4),
          "message" => message&.to_s&.slice(0, MESSAGE_LIMIT)
        }.freeze
      end

      # Marks the run over: a later `stop` does nothing.
      def finished! = @finished = true

      private

      def expired? = !@deadline.nil? && monotonic >= @deadline

      def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end

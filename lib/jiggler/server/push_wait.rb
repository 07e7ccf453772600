# frozen_string_literal: true

require "async/task"

module Jiggler
  module Server
    # The idle wait of a server that waits in the store (Redis): a fetch sent behind a blocking wait for a push, whose
    # jobs go to the workers straight from the reply, one round trip sooner than a wake followed by a fetch. The wait
    # runs in a task of its own, so that quiet and stop can cut it short (`cut`).
    class PushWait
      # What `call` returns for a wait cut short: the fetch behind it may have taken jobs that never arrived.
      CUT = :cut

      # @parameter store [Store::Redis] the fetcher's store (it responds to `fetch_when_pushed`).
      # @parameter process [String] this process's id.
      # @parameter queue [String] the one queue the process works.
      # @parameter workers [Workers]
      # @parameter timeout [Numeric] seconds to wait at most.
      def initialize(store:, process:, queue:, workers:, timeout:)
        @store = store
        @process = process
        @queue = queue
        @workers = workers
        @timeout = timeout
      end

      # Waits for a push and hands the jobs the reply brings to the workers.
      # @parameter limit [Integer] jobs to take at most.
      # @returns [Array(Store::Fetched) | Nil | CUT] the jobs taken (empty: woken in vain), nil when the wait timed
      #   out, CUT when it was cut short.
      # @raises [StandardError] what the store raised, in the caller's task, where outages are handled.
      def call(limit)
        waiter = Async::Task.current.async(
          annotation: "jiggler.fetcher.wait"
        ) do |task|
          # Known before its first I/O: a quiet or stop that comes while the wait is being sent must cut it short too.
          @task = task
          jobs = @store.fetch_when_pushed(
            @process, @queue, limit: limit, timeout: @timeout
          )
          # before the loop reads other sockets (the push's wake among them)
          @workers.assign(jobs) if jobs&.any?
          jobs
        rescue => error
          error
        end
        jobs = waiter.wait
        raise jobs if jobs.is_a?(Exception)
        waiter.stopped? ? CUT : jobs
      ensure
        @task = nil
      end

      # Cuts the wait short, if one is under way.
      def cut = @task&.stop
    end
  end
end

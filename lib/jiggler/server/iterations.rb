# frozen_string_literal: true

require_relative "../payload"
require_relative "../job_payload"
require_relative "../store/fetched"
require_relative "../store/connection_error"

module Jiggler
  module Server
    # What the server does for iterable jobs (Jiggler::Iteration): saves their cursor in their payload held in flight
    # (Store#checkpoint), tells them when the server is quieting or stopping, and puts a job that stopped for it back
    # at the head of its queue with its cursor. Jobs of other classes never reach it.
    class Iterations
      # One run of an iterable job, as the job sees it: the cursor it starts from, and its checkpoints.
      class Delivery
        # @parameter iterations [Iterations]
        # @parameter fetched [Store::Fetched]
        # @parameter job [Hash] the parsed payload, which failures and requeues are written from: the processor's, so
        #   the cursor and what progress clears are set on it.
        def initialize(iterations, fetched, job)
          @iterations = iterations
          @fetched = fetched
          @job = job
          @started_at = job["cursor"]
        end

        # The cursor the run starts from (nil: the beginning).
        def cursor = @started_at

        # Whether the server is quieting or stopping: the job should stop between two items.
        def stopping? = @iterations.stopping?

        # Sets the cursor on the job, for the failure record or requeue that may follow.
        def keep(cursor)
          @job["cursor"] = cursor unless cursor.nil?
        end

        # Saves the cursor in the payload held in flight, where a reaper finds it after kill -9.
        def checkpoint(cursor)
          keep(cursor)
          @job.replace(JobPayload.progressed(@job)) unless cursor == @started_at
          @iterations.checkpoint(@fetched, @job)
        end
      end

      # @parameter process [String] this server's id, whose in-flight jobs are rewritten.
      # @parameter reliable [Boolean] whether fetched jobs are held in flight (at-least-once).
      # @parameter store [#call] gives the store to write through.
      # @parameter stopping [#call] whether the server is quieting or stopping.
      def initialize(process:, reliable:, store:, stopping:, logger:)
        @process = process
        @reliable = reliable
        @store = store
        @stopping = stopping
        @logger = logger
      end

      # @returns [Delivery] for a job the processor is about to perform.
      def delivery(fetched, job) = Delivery.new(self, fetched, job)

      def stopping? = @stopping.call

      # Writes the job over its payload held in flight. A job no longer held (a reaper took it while this process did
      # not beat) runs elsewhere: its cursor is left to that run, and the log says so.
      # @returns [Boolean] whether it was written.
      def checkpoint(fetched, job)
        return true unless @reliable
        saved = @store.call.checkpoint(
          @process, fetched.handle, Payload.dump(job)
        )
        unless saved
          @logger.warn(
            "checkpoint: #{job["name"]} jid=#{job["jid"]} is no longer in " \
            "flight for this process (was it recovered by a reaper?): " \
            "cursor #{Payload.preview(job["cursor"])} not saved"
          )
        end
        saved
      # the job goes on; the next checkpoint tries again
      rescue Store::ConnectionError => error
        @logger.warn(
          "checkpoint: #{job["name"]} jid=#{job["jid"]}: " \
          "cursor not saved: #{error.message}"
        )
        false
      end

      # Puts a job that stopped for the shutdown back at the head of its queue (or, without at-least-once delivery,
      # at its tail), with its cursor and its interruptions counted.
      # @returns [Integer] 1, or 0 when it was no longer in flight for this process.
      def requeue(fetched, job)
        payload = Payload.dump(JobPayload.interrupted(job))
        if @reliable
          return @store.call.requeue(
            @process,
            [Store::Fetched.new(fetched.handle, fetched.queue, payload)]
          )
        end
        @store.call.push(fetched.queue, [payload])
        1
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../limited_job"

module Jiggler
  module Server
    # Lets a job of a class with a rate or concurrency limit (LimitedJob) start only within its key's budget and with
    # a slot: the processor asks before it performs the job and, when it may not, the store has already moved it out
    # of flight (to the scheduled set for a rate, to its key's waiting list for a slot), so the worker goes on to the
    # next job. The slot is given back when the job ends, however it ends.
    class Gate
      # @parameter process [String] this server's id, whose in-flight jobs the gate moves.
      # @parameter reliable [Boolean] whether fetched jobs are held in flight (at-least-once).
      # @parameter store [#call] gives the store to use (the server's, once it started).
      def initialize(process:, reliable:, store:)
        @process = process
        @reliable = reliable
        @store = store
      end

      # Takes a start of the rate and a slot, or leaves the job waiting. @returns [Boolean] whether to perform it now.
      # @parameter limits [Hash] the payload's "limits" field: "rate" and "concurrency", each with its key.
      def enter(fetched, job, limits)
        (!(rate = limits["rate"]) || rate_allows?(fetched, job, rate)) &&
          (!(slot = limits["concurrency"]) || slot_taken?(fetched, job, slot))
      end

      # Gives the job's slot back, to the oldest job waiting for one.
      # @parameter job [Hash] the parsed payload, with its "limits" field.
      def leave(job) = LimitedJob.release(@store.call, job)

      private

      # The payload's limits are read within bounds (LimitedJob.slot and .rate): another client may have written any.
      def rate_allows?(fetched, job, field)
        rate = LimitedJob.rate(field)
        @store.call.acquire_rate(
          @process,
          fetched,
          key: rate[:key],
          limit: rate[:limit],
          period: rate[:period],
          jid: job["jid"].to_s,
          reliable: @reliable
        ) == true
      end

      def slot_taken?(fetched, job, field)
        slot = LimitedJob.slot(field)
        @store.call.acquire_slot(
          @process,
          fetched,
          key: slot[:key],
          limit: slot[:limit],
          jid: job["jid"].to_s,
          ttl: slot[:ttl],
          reliable: @reliable
        ) == true
      end
    end
  end
end

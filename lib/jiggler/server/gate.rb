# frozen_string_literal: true

module Jiggler
  module Server
    # Lets a job of a class with a concurrency limit (LimitedJob) start only with a slot of its key: the processor asks
    # before it performs the job and, when it may not, the store has already moved it from flight to its key's waiting
    # list, so the worker goes on to the next job. The slot is given back when the job ends, however it ends.
    class Gate
      # @parameter process [String] this server's id, whose in-flight jobs the gate moves.
      # @parameter reliable [Boolean] whether fetched jobs are held in flight (at-least-once).
      # @parameter store [#call] gives the store to use (the server's, once it started).
      def initialize(process:, reliable:, store: -> { Jiggler.store })
        @process = process
        @reliable = reliable
        @store = store
      end

      # Takes a slot for the job, or leaves it waiting. @returns [Boolean] whether to perform it now.
      # @parameter limit [Hash] the payload's "concurrency" field: key, limit and ttl.
      def enter(fetched, job, limit)
        @store.call.acquire_slot(@process, fetched, key: limit["key"].to_s, limit: limit["limit"].to_i, jid: job["jid"].to_s,
          ttl: limit["ttl"].to_f, reliable: @reliable) == true
      end

      # Gives the job's slot back, to the oldest job waiting for one.
      def leave(job, limit)
        @store.call.release_slot(limit["key"].to_s, job["jid"].to_s, limit: limit["limit"].to_i, ttl: limit["ttl"].to_f)
      end
    end
  end
end

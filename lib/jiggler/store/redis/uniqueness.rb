# frozen_string_literal: true

require_relative "script"

module Jiggler
  module Store
    class Redis
      # Unique jobs' locks in Redis (see ../contract.md, "Unique jobs"): one key per lock, holding the jid of the job
      # that holds it, with an expiry. Taking the lock and writing the job are one script.
      module Uniqueness
        UNIQUE = Script.new("unique", parts: %w[lock])
        UNLOCK = Script.new("unlock")
        private_constant :UNIQUE, :UNLOCK

        # Takes a lock for a job and writes the job, or does nothing when the lock is held.
        # @parameter lock [String] the lock's name.
        # @parameter ttl [Numeric] seconds the lock lives at most.
        # @parameter at [Float | Nil] schedules the job for then; nil pushes it to its queue now.
        # @returns [Boolean] whether the job was written.
        def enqueue_unique(lock, jid, ttl, queue:, payload:, at: nil)
          keys = [
            @keys.unique(lock),
            @keys.queue(queue),
            @keys.queues,
            @keys.scheduled,
            @keys.unique_index
          ]
          argv = [
            jid,
            (ttl * 1000).ceil,
            queue,
            @keys.wake,
            @keys.schedule_wake,
            payload,
            at.to_s,
            (Time.now.to_f * 1000).floor
          ]
          with { |redis| UNIQUE.call(redis, keys, argv) } == 1
        end

        # Releases a lock if `jid` holds it. @returns [Boolean] whether it was released.
        def unlock(lock, jid)
          with do |redis|
            UNLOCK.call(
              redis,
              [@keys.unique(lock), @keys.unique_index],
              [jid]
            )
          end == 1
        end

        # The jid of the job holding a lock. @returns [String | Nil]
        def lock_holder(lock)
          with { |redis| redis.call("GET", @keys.unique(lock)) }
        end

        # Deletes every unique lock (part of Store::Redis#clear_all): the locks are found through their index, not by
        # walking the keyspace.
        def clear_unique_locks
          with do |redis|
            locks = redis.call("ZRANGE", @keys.unique_index, 0, -1)
            (locks << @keys.unique_index).each_slice(CHUNK) do |slice|
              redis.call_v(["DEL", *slice])
            end
          end
        end
      end
    end
  end
end

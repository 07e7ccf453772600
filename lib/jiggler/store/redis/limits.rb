# frozen_string_literal: true

require_relative "script"

module Jiggler
  module Store
    class Redis
      # Concurrency and rate limits in Redis (see ../contract.md, "Concurrency and rate limits"): per key, a sorted set
      # of the jids holding slots (scored by expiry) and a list of waiting jobs ("queue|jid|payload"); a hash of the
      # keys with waiting jobs (their limit and ttl) and one of waiting jobs per queue. A rate-limited key has a sorted
      # set of its starts in the last period and one of its plan (starts and reservations of waiting jobs). These keys
      # expire when what they hold no longer matters, and a sorted set indexes them by expiry, so that clear_all finds
      # them without walking the keyspace. Each step is one script.
      module Limits
        GATE = Script.new("gate", parts: %w[slot])
        RELEASE = Script.new("release", parts: %w[slot])
        RATE = Script.new("rate")
        private_constant :GATE, :RELEASE, :RATE

        # Takes a slot for a job about to run, or moves it from flight to its key's waiting list.
        # @parameter fetched [Fetched] the job as fetched.
        # @returns [Boolean | Nil] true: run it; false: it waits; nil: it is no longer in flight here.
        def acquire_slot(process, fetched, key:, limit:, jid:, ttl:, reliable:)
          keys = [
            @keys.limit("slots", key),
            @keys.limit("waiting", key),
            @keys.limit("keys"),
            @keys.limit("counts"),
            @keys.in_flight(process),
            @keys.limit("index")
          ]
          argv = [
            jid,
            limit,
            Time.now.to_f,
            ttl,
            key,
            fetched.handle.to_s,
            reliable ? 1 : 0,
            fetched.queue,
            fetched.payload
          ]
          {1 => true, 0 => false}[with { |redis| GATE.call(redis, keys, argv) }]
        end

        # Takes a start of a rate-limited key's budget, or moves the job from flight to the scheduled set, due when
        # the budget allows.
        # @returns [true | Float | Nil] true: run it; a time: it waits until then; nil: it is no longer in flight here.
        def acquire_rate(
          process,
          fetched,
          key:,
          limit:,
          period:,
          jid:,
          reliable:
        )
          keys = [
            @keys.limit("starts", key),
            @keys.limit("plan", key),
            @keys.in_flight(process),
            @keys.scheduled,
            @keys.limit("index")
          ]
          argv = [
            jid,
            limit,
            period,
            fetched.handle.to_s,
            reliable ? 1 : 0,
            fetched.payload,
            @keys.schedule_wake,
            key
          ]
          reply = with { |redis| RATE.call(redis, keys, argv) }
          {"run" => true, "gone" => nil}.fetch(reply) { Float(reply) }
        end

        # Frees a job's slot and moves the oldest waiting jobs of its key to the head of their queues.
        # @returns [Integer] how many waiting jobs moved.
        def release_slot(key, jid, limit:, ttl:)
          with { |redis| release(redis, key, jid, limit, ttl) }
        end

        # Moves waiting jobs of keys whose slots expired. @returns [Integer] how many moved.
        def promote_expired
          with do |redis|
            redis.call("HGETALL", @keys.limit("keys")).sum do |key, setting|
              limit, ttl = setting.split(" ")
              release(redis, key, "", Integer(limit), Float(ttl))
            end
          end
        end

        # Jobs waiting for a slot, by the queue they will run in. @returns [Hash(String, Integer)]
        def waiting_counts
          with { |redis| redis.call("HGETALL", @keys.limit("counts")) }
            .transform_values(&:to_i)
            .select { |_, count| count.positive? }
        end

        # Deletes the slots, the jobs waiting for one, and the rate windows and plans (part of Store::Redis#clear_all).
        def clear_limits
          with do |redis|
            limited = redis.call("ZRANGE", @keys.limit("index"), 0, -1) |
              redis.call("HKEYS", @keys.limit("keys"))
            doomed = limited.flat_map do |key|
              %w[slots waiting starts plan].map do |part|
                @keys.limit(part, key)
              end
            end
            doomed.push(
              @keys.limit("index"),
              @keys.limit("keys"),
              @keys.limit("counts")
            )
            doomed.each_slice(CHUNK) { |slice| redis.call_v(["DEL", *slice]) }
          end
        end

        private

        def release(redis, key, jid, limit, ttl)
          keys = [
            @keys.limit("slots", key),
            @keys.limit("waiting", key),
            @keys.limit("keys"),
            @keys.limit("counts"),
            @keys.queues,
            @keys.limit("index")
          ]
          RELEASE.call(
            redis,
            keys,
            [jid, limit, Time.now.to_f, ttl, key, @keys.wake, @keys.queue("")]
          )
        end
      end
    end
  end
end

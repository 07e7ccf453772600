# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # The reading and cleaning side of the Redis store, used by Summary and Cleaner. It reads only the keys it
      # knows by name: no SCAN of the keyspace.
      module Admin
        SETS = %i[scheduled retry dead].freeze
        COUNTERS = %i[processed failures].freeze

        # The counters and set sizes.
        # @returns [Hash(Symbol, Integer)] processed, failures, scheduled, retry and dead.
        def counts
          replies = with do |redis|
            redis.pipelined do |pipeline|
              COUNTERS.each { |name| pipeline.call("GET", @keys.public_send(name)) }
              SETS.each { |name| pipeline.call("ZCARD", @keys.public_send(name)) }
            end
          end
          (COUNTERS + SETS).zip(replies.map(&:to_i)).to_h
        end

        # The size of every queue that holds jobs.
        # @returns [Hash(String, Integer)]
        def queue_sizes
          names = with { |redis| redis.call("SMEMBERS", @keys.queues) }.sort
          sizes = with { |redis| redis.pipelined { |pipeline| names.each { |name| pipeline.call("LLEN", @keys.queue(name)) } } }
          names.zip(sizes).to_h.select { |_, size| size.positive? }
        end

        # The live processes and what each last reported.
        # @returns [Hash(String, String)] process id to its JSON description.
        def processes = registrations.compact

        # Jobs waiting in a queue, next to run first.
        # @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100)
          with { |redis| redis.call("LRANGE", @keys.queue(name), -limit, -1) }.reverse
        end

        # Jobs in a sorted set, soonest (or oldest) first.
        # @parameter set [Symbol] :scheduled, :retry or :dead.
        # @returns [Array([String, Float])] payload and score.
        def set_entries(set, limit: 100)
          with { |redis| redis.call("ZRANGE", set_key(set), 0, limit - 1, "WITHSCORES") }
        end

        # Deletes a queue and its jobs.
        def clear_queue(name)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("DEL", @keys.queue(name))
              pipeline.call("SREM", @keys.queues, name)
            end
          end
        end

        # Deletes every queue and its jobs.
        def clear_all_queues
          with { |redis| redis.call("SMEMBERS", @keys.queues) }.each { |name| clear_queue(name) }
        end

        # Empties the scheduled, retry or dead set.
        def clear_set(set)
          with { |redis| redis.call("DEL", set_key(set)) }
        end

        # Sets the processed or failures counter to zero.
        def reset_counter(counter)
          raise ArgumentError, "unknown counter #{counter.inspect}; use one of #{COUNTERS}" unless COUNTERS.include?(counter)
          with { |redis| redis.call("DEL", @keys.public_send(counter)) }
        end

        # Forgets every registered process. Jobs held by processes that are gone go back to their queues first; live
        # processes keep theirs and register again with their next heartbeat.
        def clear_processes
          ids = registered_processes
          live = processes.keys
          (ids - live).each { |id| requeue(id) }
          with { |redis| redis.call_v(["DEL", @keys.processes, *ids.map { |id| @keys.process(id) }]) }
        end

        # Deletes all of the namespace's data, jobs in flight included.
        def clear_all
          ids = registered_processes
          with { |redis| redis.call_v(["DEL", @keys.processes, *ids.flat_map { |id| [@keys.process(id), @keys.in_flight(id)] }]) }
          clear_all_queues
          SETS.each { |set| clear_set(set) }
          COUNTERS.each { |counter| reset_counter(counter) }
        end

        private

        def registered_processes = with { |redis| redis.call("ZRANGE", @keys.processes, 0, -1) }

        # Every registered process id with its description, nil where the registration expired.
        def registrations
          ids = registered_processes
          return {} if ids.empty?
          ids.zip(with { |redis| redis.call_v(["MGET", *ids.map { |id| @keys.process(id) }]) }).to_h
        end

        def set_key(set)
          raise ArgumentError, "unknown set #{set.inspect}; use one of #{SETS}" unless SETS.include?(set)
          @keys.public_send(set)
        end
      end
    end
  end
end

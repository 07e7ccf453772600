# frozen_string_literal: true

require_relative "../../payload"

module Jiggler
  module Store
    class Redis
      # The reading and cleaning side of the Redis store, used by Summary, Cleaner and the web dashboard. It reads
      # only the keys it knows by name: no SCAN of the keyspace.
      module Admin
        SETS = %i[scheduled retry dead].freeze
        COUNTERS = %i[processed failures].freeze
        FILTER_CHUNK = 1000
        private_constant :FILTER_CHUNK

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
        # @parameter offset [Integer] how many of the next jobs to skip.
        # @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100, offset: 0)
          with { |redis| redis.call("LRANGE", @keys.queue(name), -(offset + limit), -(offset + 1)) }.reverse
        end

        # Jobs in a sorted set, soonest (or oldest) first.
        # @parameter set [Symbol] :scheduled, :retry or :dead.
        # @parameter offset [Integer] how many entries to skip.
        # @parameter filter [String | Nil] keep only jobs whose class name or jid contains this text.
        # @parameter reverse [Boolean] latest (or newest) first.
        # @returns [Array([String, Float])] payload and score.
        def set_entries(set, limit: 100, offset: 0, filter: nil, reverse: false)
          return filtered_set_entries(set, filter, limit, offset, reverse) if filter
          set_range(set, offset, offset + limit - 1, reverse)
        end

        # Finds one entry of a sorted set by its score and jid.
        # @returns [String | Nil] its payload.
        def set_entry(set, score, jid)
          with { |redis| redis.call("ZRANGE", set_key(set), score, score, "BYSCORE") }.find { |payload| jid_of(payload) == jid }
        end

        # Deletes entries of a sorted set.
        # @parameter entries [Array([Float, String])] score and jid of each.
        # @returns [Integer] how many were deleted.
        def delete_set_entries(set, entries)
          members = find_members(set, entries)
          return 0 if members.empty?
          with { |redis| redis.call_v(["ZREM", set_key(set), *members]) }
        end

        # Moves entries of a sorted set where the block says, now.
        # @yields {|from, payload| ...} the set and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_set_entries(set, entries, now: Time.now.to_f, &destination)
          members = find_members(set, entries)
          return 0 if members.empty?
          with { |redis| move_due(redis, set_key(set), members.map { |member| due_move(member, set, &destination) }, now) }
        end

        # Moves entries of the scheduled or retry set to the dead set, scored `now`.
        # @yields {|payload| ...} an entry; returns the payload to store in the dead set (JobRules.killed).
        # @returns [Integer] how many moved.
        # @raises [ArgumentError] for the dead set.
        def kill_set_entries(set, entries, now: Time.now.to_f)
          raise ArgumentError, "only scheduled and retry entries can be killed (got #{set.inspect})" if set == :dead
          pairs = find_members(set, entries).flat_map { |member| [member, yield(member)] }
          return 0 if pairs.empty?
          with { |redis| SCRIPTS[:kill].call(redis, [set_key(set), @keys.dead], [now, *pairs]) }
        end

        # Deletes one job waiting in a queue.
        # @parameter payload [String] the job exactly as queue_entries returned it.
        # @returns [Boolean] whether it was there.
        def delete_queue_entry(name, payload)
          with { |redis| redis.call("LREM", @keys.queue(name), -1, payload) } == 1
        end

        # Stops servers from fetching from a queue; jobs are still pushed to it.
        def pause_queue(name)
          with { |redis| redis.call("SADD", @keys.paused, name) }
        end

        # Lets servers fetch from a paused queue again, waking idle ones.
        def resume_queue(name)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("SREM", @keys.paused, name)
              pipeline.call("PUBLISH", @keys.wake, name)
            end
          end
        end

        # @returns [Array(String)] the names of the paused queues, sorted.
        def paused_queues = with { |redis| redis.call("SMEMBERS", @keys.paused) }.sort

        # Deletes a queue and its jobs, batch items waiting for it included.
        def clear_queue(name)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("DEL", @keys.queue(name))
              pipeline.call("SREM", @keys.queues, name)
            end
          end
          clear_batches(name)
        end

        # Deletes every queue and its jobs, batch items included.
        def clear_all_queues
          with { |redis| redis.call("SMEMBERS", @keys.queues) }.each { |name| clear_queue(name) }
          clear_batches
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

        # Deletes all of the namespace's data, jobs in flight and paused queues included.
        def clear_all
          ids = registered_processes
          with { |redis| redis.call_v(["DEL", @keys.processes, *ids.flat_map { |id| [@keys.process(id), @keys.in_flight(id)] }]) }
          clear_all_queues
          with { |redis| redis.call("DEL", @keys.paused) }
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

        def set_range(set, first, last, reverse)
          command = ["ZRANGE", set_key(set), first, last]
          command << "REV" if reverse
          with { |redis| redis.call_v([*command, "WITHSCORES"]) }
        end

        # Reads the set in chunks, keeping the entries that match, until it has enough.
        def filtered_set_entries(set, filter, limit, offset, reverse)
          matches = []
          (0..).step(FILTER_CHUNK) do |first|
            chunk = set_range(set, first, first + FILTER_CHUNK - 1, reverse)
            matches.concat(chunk.select { |payload, _| matches_filter?(payload, filter) })
            return matches.drop(offset).first(limit) if matches.size >= offset + limit || chunk.size < FILTER_CHUNK
          end
        end

        def matches_filter?(payload, filter)
          job = Payload.load(payload)
          job["name"].include?(filter) || job["jid"].include?(filter)
        rescue Payload::MalformedError
          false
        end

        def jid_of(payload)
          Payload.load(payload)["jid"]
        rescue Payload::MalformedError
          nil
        end

        def find_members(set, entries) = entries.filter_map { |score, jid| set_entry(set, score, jid) }.uniq

        def set_key(set)
          raise ArgumentError, "unknown set #{set.inspect}; use one of #{SETS}" unless SETS.include?(set)
          @keys.public_send(set)
        end
      end
    end
  end
end

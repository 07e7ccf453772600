# frozen_string_literal: true

require_relative "script"

module Jiggler
  module Store
    class Redis
      # The acting side of the admin role of the Redis store, used by the Cleaner and the web dashboard: deletes,
      # moves, pauses and clears. Each move of a job is one script, so a job stays in exactly one place.
      module AdminActions
        CLEAR = Script.new("clear")
        private_constant :CLEAR

        # Deletes entries of a sorted set.
        # @parameter entries [Array([Float, String])] score and jid of each.
        # @returns [Integer] how many were deleted.
        def delete_set_entries(set, entries)
          members = find_members(set, entries)
          return 0 if members.empty?
          with { |redis| redis.call_v(["ZREM", @keys.set(set), *members]) }
        end

        # Moves entries of a sorted set where the block says, now.
        # @yields {|from, payload| ...} the set and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_set_entries(set, entries, now: Time.now.to_f, &destination)
          members = find_members(set, entries)
          return 0 if members.empty?
          with do |redis|
            move_due(
              redis,
              @keys.set(set),
              members.map { |member| due_move(member, set, &destination) },
              now
            )
          end
        end

        # Moves entries of the scheduled or retry set to the dead set, scored `now`.
        # @yields {|payload| ...} an entry; returns the payload to store in the dead set (JobRules.killed).
        # @returns [Integer] how many moved.
        # @raises [ArgumentError] for the dead set.
        def kill_set_entries(set, entries, now: Time.now.to_f)
          if set == :dead
            raise ArgumentError,
              "only scheduled and retry entries can be killed " \
              "(got #{set.inspect})"
          end
          pairs = find_members(set, entries).flat_map do |member|
            [member, yield(member)]
          end
          return 0 if pairs.empty?
          with do |redis|
            SCRIPTS[:kill].call(
              redis,
              [@keys.set(set), @keys.dead],
              [now, *pairs]
            )
          end
        end

        # Deletes one job waiting in a queue.
        # @parameter payload [String] the job exactly as queue_entries returned it.
        # @returns [Boolean] whether it was there.
        def delete_queue_entry(name, payload)
          with do |redis|
            redis.call("LREM", @keys.queue(name), -1, payload)
          end == 1
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
        def paused_queues
          with { |redis| redis.call("SMEMBERS", @keys.paused) }.sort
        end

        # Deletes a queue and its jobs, batch items waiting for it included, releasing the unique jobs' locks.
        # @returns [Integer] how many jobs the queue held.
        def clear_queue(name)
          count = clear_releasing(@keys.queue(name), "list", name)
          clear_batches(name)
          count
        end

        # Deletes every queue and its jobs, batch items included.
        def clear_all_queues
          with { |redis| redis.call("SMEMBERS", @keys.queues) }
            .each { |name| clear_queue(name) }
          clear_batches
        end

        # Empties the scheduled, retry or dead set, releasing the unique jobs' locks.
        # @returns [Integer] how many jobs it held.
        def clear_set(set) = clear_releasing(@keys.set(set), "set", "")

        # Sets the processed or failures counter to zero.
        def reset_counter(counter)
          with { |redis| redis.call("DEL", @keys.counter(counter)) }
        end

        # Deletes the jobs (queued, in flight and in the sets), the registry, paused queues and counters (part of
        # Store::Redis#clear_all).
        def clear_jobs_and_processes
          ids = registered_processes
          with do |redis|
            redis.call_v([
              "DEL",
              @keys.processes,
              *ids.flat_map { |id| [@keys.process(id), @keys.in_flight(id)] }
            ])
          end
          clear_all_queues
          with { |redis| redis.call("DEL", @keys.paused) }
          Keys::SETS.each { |set| clear_set(set) }
          Keys::COUNTERS.each { |counter| reset_counter(counter) }
        end

        private

        # Deletes a list or sorted set in one step, then releases the locks its unique jobs held (each only if that
        # job still holds it), as deleting one of them does.
        def clear_releasing(key, type, name)
          count, held = with do |redis|
            CLEAR.call(redis, [key, @keys.queues], [type, name])
          end
          held.each_slice(2) { |lock, jid| unlock(lock, jid) }
          count
        end

        # The members that entries name, looked up in one round trip: a sweep finds thousands at a time.
        def find_members(set, entries)
          key = @keys.set(set)
          found = with do |redis|
            redis.pipelined do |pipeline|
              entries.each do |score, _|
                pipeline.call("ZRANGE", key, score, score, "BYSCORE")
              end
            end
          end
          entries.zip(found).filter_map do |(_, jid), members|
            members.find { |member| jid_of(member) == jid }
          end.uniq
        end
      end
    end
  end
end

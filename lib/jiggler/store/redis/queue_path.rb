# frozen_string_literal: true

require_relative "../fetched"

module Jiggler
  module Store
    class Redis
      # The queue path of the Redis store (see ../contract.md): queues are lists; each process records the jobs it
      # holds in its own in-flight hash, keyed by "token|queue" (the handle of a Fetched); scheduled jobs and retries
      # wait in sorted sets scored by time. Every move is one Lua script.
      module QueuePath
        # Appends jobs to a queue; idle servers are woken.
        # @parameter queue [String]
        # @parameter payloads [Array(String)]
        # @returns [Array(Integer)] the queue's length after each chunk.
        def push(queue, payloads)
          return [push_one(queue, payloads.first)] if payloads.size == 1
          keys = [@keys.queue(queue), @keys.queues]
          argvs = payloads.each_slice(PUSH_CHUNK).map do |chunk|
            [queue, @keys.wake, *chunk]
          end
          with { |redis| SCRIPTS[:push].call_each(redis, keys, argvs) }
        end

        # Adds jobs to the scheduled set, announcing them to idle schedulers when one is due sooner than the others.
        # @parameter entries [Array([Float, String])] pairs of run-at time (epoch seconds) and payload.
        def schedule(entries)
          with do |redis|
            entries.each_slice(CHUNK) do |chunk|
              SCRIPTS[:schedule].call(
                redis,
                [@keys.scheduled],
                [
                  @keys.schedule_wake,
                  chunk.map(&:first).min,
                  *chunk.flatten(1)
                ]
              )
            end
          end
        end

        # Acknowledges finished jobs and takes up to `limit` new ones, highest priority queue first; paused queues are
        # skipped.
        # @parameter process [String] the fetching process's id.
        # @parameter queues [Array(String)] queue names in priority order.
        # @parameter limit [Integer] at most this many jobs (0 only acknowledges).
        # @parameter acks [Array(String)] handles of jobs that finished.
        # @parameter reliable [Boolean] record fetched jobs in flight (at-least-once).
        # @returns [Array(Fetched)] handles are in-flight fields, "token|queue".
        def fetch(process, queues, limit:, acks: [], reliable: true)
          keys = [
            @keys.in_flight(process),
            @keys.processed,
            @keys.paused,
            *queues.map { |name| @keys.queue(name) }
          ]
          # Tokens are spent before the call: if its reply is lost, the next fetch must not reuse (and overwrite) the
          # in-flight records it may have written.
          token = @tokens[process]
          @tokens[process] = token + limit
          argv = [limit, token, reliable ? 1 : 0, acks.size, *acks, *queues]
          fetched(with { |redis| SCRIPTS[:fetch].call(redis, keys, argv) })
        end

        # Waits up to `timeout` seconds for a job in `queue`, then takes up to `limit` jobs as `fetch` does, recorded
        # in flight, in the same round trip: `BLMOVE queue queue LEFT LEFT` returns as soon as the queue holds a job and
        # leaves it as it was, and the fetch script, sent behind it on the same connection, runs right after it. A
        # wait cut short (its task stopped) leaves replies unread, so redis-client drops that connection.
        # @parameter process [String] the fetching process's id.
        # @parameter queue [String] the one queue to wait on.
        # @returns [Array(Fetched) | Nil] nil when no job came in time.
        def fetch_when_pushed(process, queue, limit:, timeout:)
          keys = [
            @keys.in_flight(process),
            @keys.processed,
            @keys.paused,
            @keys.queue(queue)
          ]
          token = @tokens[process]
          # spent before the call, as in `fetch`
          @tokens[process] = token + limit
          argv = [limit, token, 1, 0, queue]
          with do |redis|
            woken, taken = redis.pipelined(exception: false) do |pipeline|
              pipeline.blocking_call(
                timeout,
                "BLMOVE",
                keys.last,
                keys.last,
                "LEFT",
                "LEFT",
                timeout
              )
              pipeline.call_v(SCRIPTS[:fetch].command(keys, argv))
            end
            raise woken if woken.is_a?(::RedisClient::Error)
            if taken.is_a?(::RedisClient::Error)
              taken = SCRIPTS[:fetch].rerun(redis, keys, argv, taken)
            end
            (woken || taken.any?) ? fetched(taken) : nil
          end
        end

        # Moves failed jobs out of flight into the retry or the dead set, and counts the failures; a snoozed job goes
        # to the scheduled set (announced) and a cancelled one to the dead set, neither counted as a failure.
        # @parameter failures [Array(Failed)]
        # @parameter dead_cutoff [Float] dead jobs older than this epoch time are dropped.
        # @parameter dead_max [Integer] the dead set keeps at most this many jobs.
        # @returns [Integer] how many moved (a job no longer in flight is skipped).
        def fail(process, failures, reliable:, dead_cutoff:, dead_max:)
          keys = [
            @keys.in_flight(process),
            @keys.retry,
            @keys.dead,
            @keys.failures,
            @keys.scheduled
          ]
          argv = [reliable ? 1 : 0, dead_cutoff, dead_max, @keys.schedule_wake]
          failures.each do |failed|
            argv.push(
              failed.fetched.handle.to_s,
              failed.set.to_s,
              failed.at,
              failed.payload
            )
          end
          with { |redis| SCRIPTS[:fail].call(redis, keys, argv) }
        end

        # Puts jobs a process holds in flight back at the head of their queues, each exactly once.
        # @parameter jobs [Array(Fetched) | Nil] the jobs, each with the payload to push; nil: every job the process
        #   holds, as recorded.
        # @returns [Integer] how many jobs went back.
        def requeue(process, jobs = nil)
          key = @keys.in_flight(process)
          with do |redis|
            moves = jobs&.map do |job|
              [job.handle, job.queue, job.payload.to_s]
            end
            moves ||= redis.call("HKEYS", key).map do |field|
              [field, field.split("|", 2).last, ""]
            end
            # Newest first: each goes to the head of its queue, so the first fetched ends up first again.
            moves
              .sort_by { |field, _| -field.to_i }
              .each_slice(CHUNK)
              .sum { |slice| move(redis, key, "in_flight", slice) }
          end
        end

        # The jobs a process holds in flight.
        # @returns [Array(Fetched)]
        def in_flight(process)
          with { |redis| redis.call("HGETALL", @keys.in_flight(process)) }
            .map do |field, payload|
              Fetched.new(field, field.split("|", 2).last, payload)
            end
        end

        # How many jobs a process holds in flight.
        def in_flight_count(process)
          with { |redis| redis.call("HLEN", @keys.in_flight(process)) }
        end

        # Rewrites the payload of a job `process` holds in flight (an iterable job's checkpoint, Jiggler::Iteration),
        # only while it holds it, in one script: what a reaper or a requeue moves from then on carries that payload.
        # @parameter handle [String] the job's in-flight field.
        # @parameter payload [String]
        # @returns [Boolean] false when the job is no longer in flight for `process`.
        def checkpoint(process, handle, payload)
          with do |redis|
            SCRIPTS[:checkpoint].call(
              redis,
              [@keys.in_flight(process)],
              [handle.to_s, payload]
            )
          end == 1
        end

        # When the earliest scheduled job or retry is due. @returns [Float | Nil] epoch seconds; nil when there is none.
        def next_due
          firsts = with do |redis|
            redis.pipelined do |pipeline|
              [@keys.scheduled, @keys.retry].each do |set|
                pipeline.call("ZRANGE", set, 0, 0, "WITHSCORES")
              end
            end
          end
          firsts.filter_map { |first| first.first&.last&.to_f }.min
        end

        # Moves due scheduled jobs and retries where the block says. Both sets are read in one round trip, so an idle
        # check costs one.
        # @parameter now [Float] epoch seconds.
        # @yields {|from, payload| ...} :scheduled or :retry, and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many jobs moved.
        def enqueue_due(now, &destination)
          sets = [[@keys.scheduled, :scheduled], [@keys.retry, :retry]]
          firsts = with do |redis|
            redis.pipelined do |pipeline|
              sets.each { |set, _| pipeline.call_v(due_range(set, now)) }
            end
          end
          sets.zip(firsts).sum do |(set, from), members|
            if members.empty?
              0
            else
              enqueue_due_from(set, from, now, members, &destination)
            end
          end
        end

        private

        # A queue holding at least this many jobs at a push is taken to hold jobs at the next push from this store.
        BACKLOG = 10
        private_constant :BACKLOG

        # Pushes one job (a single enqueue, which skips the chunking). Into a queue that held a backlog at the last push
        # from this store, it is a bare LPUSH, the cheapest write there is: a queue holding jobs is registered already,
        # and its servers are awake. Only if the reply shows the queue was empty after all (drained meanwhile) does a
        # second step register it and wake idle servers; cut before that step, the job is safe in the queue and idle
        # servers find it by their poll. Otherwise the push script does all three in one step.
        # @returns [Integer] the queue's length after the push.
        def push_one(queue, payload)
          key = @keys.queue(queue)
          length = if @backlogs[queue]
            with { |redis| redis.call("LPUSH", key, payload) }
              .tap { |pushed| announce(queue) if pushed == 1 }
          else
            with do |redis|
              SCRIPTS[:push].call(
                redis,
                [key, @keys.queues],
                [queue, @keys.wake, payload]
              )
            end
          end
          @backlogs[queue] = length > BACKLOG
          length
        end

        # Registers a queue and wakes idle servers, as push.lua does for a push to an empty queue.
        def announce(queue)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("SADD", @keys.queues, queue)
              pipeline.call("PUBLISH", @keys.wake, queue)
            end
          end
        end

        # The jobs of a fetch.lua reply: per queue, its name and its in-flight fields and payloads.
        def fetched(reply)
          jobs = []
          reply.each_slice(2) do |queue, taken|
            index = 0
            while index < taken.size
              jobs << Fetched.new(taken[index], queue, taken[index + 1])
              index += 2
            end
          end
          jobs
        end

        # Moves due members of a set, DUE_CHUNK at a time, starting with `members` (the first chunk, already read).
        def enqueue_due_from(set, from, now, members, &destination)
          total = 0
          loop do
            total += with do |redis|
              move_due(
                redis,
                set,
                members.map { |member| due_move(member, from, &destination) },
                now
              )
            end
            return total if members.size < DUE_CHUNK
            members = with { |redis| redis.call_v(due_range(set, now)) }
            return total if members.empty?
          end
        end

        def due_range(set, now)
          ["ZRANGE", set, "-inf", now, "BYSCORE", "LIMIT", 0, DUE_CHUNK]
        end
      end
    end
  end
end

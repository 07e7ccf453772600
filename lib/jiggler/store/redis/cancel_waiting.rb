# frozen_string_literal: true

require_relative "script"
require_relative "../../payload"

module Jiggler
  module Store
    class Redis
      # Cancels a job where it waits (Jiggler.cancel): in the scheduled or retry set, a batch, its limit key's waiting
      # list or a queue. The job is looked for by reads, in the places it may leave before those it may go to (a due
      # job moves from its set to a queue, a freed slot moves a waiting job to a queue), so one that moves meanwhile is
      # found further on; then one script (cancel.lua) takes it out and stores it cancelled, only if it is still where
      # it was found. A job fetched in between is left to the cancel request.
      module CancelWaiting
        CANCEL = Script.new("cancel")
        # Entries read per call while looking.
        PAGE = 1_000
        # Looks again when the job left the place it was found in before the script ran (it moved on).
        ATTEMPTS = 3
        private_constant :CANCEL, :PAGE, :ATTEMPTS

        # Moves a waiting job to the dead set, as the block marks it, in one atomic step.
        # @parameter jid [String]
        # @parameter now [Float] epoch seconds, its score in the dead set.
        # @parameter dead_cutoff [Float] dead jobs older than this are dropped.
        # @parameter dead_max [Integer] the dead set keeps at most this many jobs.
        # @yields {|payload| ...} the job as it waits; returns the payload to store (marked cancelled).
        # @returns [Boolean] whether it was waiting (false: running, finished, or unknown).
        def cancel_waiting(jid, now:, dead_cutoff:, dead_max:)
          ATTEMPTS.times do
            found = find_waiting(jid) or return false
            kind, key, member, payload, name, limit_key = found
            unique = parse_job(payload)["unique"]
            lock = unique["lock"] if unique.is_a?(Hash)
            keys = [
              key,
              @keys.dead,
              @keys.unique(lock.to_s),
              @keys.unique_index,
              @keys.limit("keys"),
              @keys.limit("counts"),
              @keys.batches
            ]
            argv = [
              kind,
              member,
              now,
              yield(payload),
              dead_cutoff,
              dead_max,
              jid,
              lock.is_a?(String) ? 1 : 0,
              name.to_s,
              limit_key.to_s
            ]
            return true if with { |redis| CANCEL.call(redis, keys, argv) } == 1
          end
          false
        end

        private

        # Where a waiting job is: [kind, key, member, payload, batch name or queue, limit key], or nil.
        def find_waiting(jid)
          %i[scheduled retry].each do |set|
            member = scan_set(@keys.set(set), jid) and
              return ["set", @keys.set(set), member, member]
          end
          if (batch, member = batch_member(jid))
            return ["batch", @keys.batch(batch), member, member, batch]
          end
          if (limit_key, entry, = slot_waiting(jid))
            queue, _, payload = entry.split("|", 3)
            return [
              "waiting",
              @keys.limit("waiting", limit_key),
              entry,
              payload,
              queue,
              limit_key
            ]
          end
          with { |redis| redis.call("SMEMBERS", @keys.queues) }.each do |queue|
            payload, = scan_list(@keys.queue(queue)) do |queued|
              queued.include?(jid) && parse_job(queued)["jid"] == jid
            end
            return ["list", @keys.queue(queue), payload, payload] if payload
          end
          nil
        end

        # A batch item not yet in a batch: [batch name ("queue|class"), its member], or nil.
        def batch_member(jid)
          with { |redis| redis.call("SMEMBERS", @keys.batches) }.each do |batch|
            member = scan_set(@keys.batch(batch), jid) and
              return [batch, member]
          end
          nil
        end

        # A job waiting for a concurrency slot: [limit key, its entry ("queue|jid|payload"), how many wait before it],
        # or nil.
        def slot_waiting(jid)
          with { |redis| redis.call("HKEYS", @keys.limit("keys")) }
            .each do |limit_key|
              entry, position =
                scan_list(@keys.limit("waiting", limit_key)) do |waiting|
                  waiting.split("|", 3)[1] == jid
                end
              return [limit_key, entry, position] if entry
            end
          nil
        end

        # The member of a sorted set whose payload has this jid: ZSCAN keeps only members holding its text.
        def scan_set(key, jid)
          pattern = "*#{jid.gsub(/[*?\[\]\\]/) { |char| "\\#{char}" }}*"
          cursor = "0"
          loop do
            cursor, members = with do |redis|
              redis.call("ZSCAN", key, cursor, "MATCH", pattern, "COUNT", PAGE)
            end
            members.each_slice(2) do |member, _|
              return member if parse_job(member)["jid"] == jid
            end
            return nil if cursor == "0"
          end
        end

        # The first entry of a list the block accepts, read a page at a time: [entry, its index], or nil.
        def scan_list(key)
          (0..).step(PAGE) do |first|
            page = with do |redis|
              redis.call("LRANGE", key, first, first + PAGE - 1)
            end
            index = page.index { |entry| yield(entry) }
            return [page[index], first + index] if index
            return nil if page.size < PAGE
          end
        end

        def parse_job(payload)
          job = Payload.parse(payload)
          job.is_a?(Hash) ? job : {}
        rescue Payload::MalformedError
          {}
        end
      end
    end
  end
end

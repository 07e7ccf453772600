# frozen_string_literal: true

require_relative "../../payload"

module Jiggler
  module Store
    class Redis
      # The reading side of the admin role of the Redis store, used by Summary and the web dashboard: counters, sizes
      # and pages of queues and sets. It reads only the keys it knows by name: no SCAN of the keyspace.
      module Admin
        FILTER_CHUNK = 1000
        SCAN_CHUNK = 1000
        private_constant :FILTER_CHUNK, :SCAN_CHUNK

        # The counters and set sizes.
        # @returns [Hash(Symbol, Integer)] processed, failures, scheduled, retry and dead.
        def counts
          replies = with do |redis|
            redis.pipelined do |pipeline|
              Keys::COUNTERS.each do |name|
                pipeline.call("GET", @keys.counter(name))
              end
              Keys::SETS.each { |name| pipeline.call("ZCARD", @keys.set(name)) }
            end
          end
          (Keys::COUNTERS + Keys::SETS).zip(replies.map(&:to_i)).to_h
        end

        # The size of every queue that holds jobs.
        # @returns [Hash(String, Integer)]
        def queue_sizes
          names = with { |redis| redis.call("SMEMBERS", @keys.queues) }.sort
          sizes = with do |redis|
            redis.pipelined do |pipeline|
              names.each { |name| pipeline.call("LLEN", @keys.queue(name)) }
            end
          end
          names.zip(sizes).to_h.select { |_, size| size.positive? }
        end

        # Jobs waiting in a queue, next to run first.
        # @parameter offset [Integer] how many of the next jobs to skip.
        # @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100, offset: 0)
          with do |redis|
            redis.call(
              "LRANGE", @keys.queue(name), -(offset + limit), -(offset + 1)
            )
          end.reverse
        end

        # Jobs in a sorted set, soonest (or oldest) first.
        # @parameter set [Symbol] :scheduled, :retry or :dead.
        # @parameter offset [Integer] how many entries to skip.
        # @parameter filter [String | Nil] keep only jobs whose class name or jid contains this text.
        # @parameter reverse [Boolean] latest (or newest) first.
        # @returns [Array([String, Float])] payload and score.
        def set_entries(set, limit: 100, offset: 0, filter: nil, reverse: false)
          if filter
            return filtered_set_entries(set, filter, limit, offset, reverse)
          end
          set_range(set, offset, offset + limit - 1, reverse)
        end

        # Yields every entry of a sorted set, soonest first, reading it a chunk at a time from a score on, so that
        # entries moved meanwhile (by this caller or a server) shift nothing: each read costs the same, whatever the
        # set's size.
        # @yields {|payload, score| ...}
        # @returns [Enumerator] without a block.
        def each_set_entry(set, &block)
          return enum_for(:each_set_entry, set) unless block
          from = "-inf"
          skip = 0 # entries already read that have the score `from`
          loop do
            chunk = set_chunk(set, from, skip)
            chunk.each(&block)
            return if chunk.size < SCAN_CHUNK
            last = chunk.last.last
            skip = ((last == from) ? skip : 0) +
              chunk.count { |_, score| score == last }
            from = last
          end
        end

        # Finds one entry of a sorted set by its score and jid.
        # @returns [String | Nil] its payload.
        def set_entry(set, score, jid)
          with do |redis|
            redis.call("ZRANGE", @keys.set(set), score, score, "BYSCORE")
          end.find { |payload| jid_of(payload) == jid }
        end

        private

        def set_chunk(set, from, skip)
          command = [
            "ZRANGE", @keys.set(set), from, "+inf", "BYSCORE",
            "LIMIT", skip, SCAN_CHUNK, "WITHSCORES"
          ]
          with { |redis| redis.call_v(command) }
        end

        def set_range(set, first, last, reverse)
          command = ["ZRANGE", @keys.set(set), first, last]
          command << "REV" if reverse
          with { |redis| redis.call_v([*command, "WITHSCORES"]) }
        end

        # Reads the set in chunks, keeping the entries that match, until it has enough.
        def filtered_set_entries(set, filter, limit, offset, reverse)
          matches = []
          (0..).step(FILTER_CHUNK) do |first|
            chunk = set_range(set, first, first + FILTER_CHUNK - 1, reverse)
            matches.concat(
              chunk.select { |payload, _| matches_filter?(payload, filter) }
            )
            if matches.size >= offset + limit || chunk.size < FILTER_CHUNK
              return matches.drop(offset).first(limit)
            end
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
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # The reading side of the admin role of the PostgreSQL store, used by Summary, the API and the
      # dashboard.
      module Admin
        FILTER = "(strpos(@.json(payload) ->> 'name', $2) > 0 " \
          "OR strpos(@.json(payload) ->> 'jid', $2) > 0)"
        SCAN_CHUNK = 1000
        # The entries after the last one read, in the order of the set's index.
        AFTER = "state = $1 AND (run_at, id) > ($2, $3) " \
          "ORDER BY run_at, id LIMIT #{SCAN_CHUNK}"
        private_constant :FILTER, :SCAN_CHUNK, :AFTER

        # @returns [Hash(Symbol, Integer)] processed, failures, scheduled, retry and dead.
        def counts
          with do
            counters = @db.query("SELECT name, value FROM @.counters").to_h
            sets = @db.query(
              "SELECT state, count(*) FROM @.jobs " \
              "WHERE state IN ('scheduled', 'retry', 'dead') GROUP BY state"
            ).to_h
            COUNTERS.to_h { |name| [name.to_sym, counters[name].to_i] }
              .merge(SETS.to_h { |set| [set.to_sym, sets[set].to_i] })
          end
        end

        # @returns [Hash(String, Integer)] the size of every queue that holds jobs.
        def queue_sizes
          with do
            @db.query(
              "SELECT queue, count(*) FROM @.jobs WHERE state = 'queued' " \
              "GROUP BY queue ORDER BY queue"
            ).to_h
          end
        end

        # Jobs waiting in a queue, next to run first. @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100, offset: 0)
          with do
            @db.query(
              "SELECT payload FROM @.jobs " \
              "WHERE state = 'queued' AND queue = $1 " \
              "ORDER BY run_at, id LIMIT $2 OFFSET $3",
              [name, limit, offset]
            ).flatten
          end
        end

        # Jobs in a set, soonest (or oldest) first; `reverse` gives the latest first, `filter` keeps
        # only jobs whose class name or jid contains the text. @returns [Array([String, Float])]
        # payload and score.
        def set_entries(set, limit: 100, offset: 0, filter: nil, reverse: false)
          where = if filter
            "state = $1 AND #{FILTER}"
          else
            "state = $1 AND $2::text IS NULL"
          end
          order = reverse ? "run_at DESC, id DESC" : "run_at, id"
          with do
            @db.query(
              "SELECT payload, run_at FROM @.jobs " \
              "WHERE #{where} ORDER BY #{order} LIMIT $3 OFFSET $4",
              [set_state(set), filter, limit, offset]
            )
          end
        end

        # Yields every entry of a set, soonest first, a chunk at a time after the last entry read.
        # @yields {|payload, score| ...}
        # @returns [Enumerator] without a block.
        def each_set_entry(set)
          return enum_for(:each_set_entry, set) unless block_given?
          after = [-Float::INFINITY, 0]
          loop do
            values = [set_state(set), *after]
            rows = with do
              @db.query(
                "SELECT payload, run_at, id FROM @.jobs WHERE #{AFTER}",
                values
              )
            end
            rows.each { |payload, score, _| yield payload, score }
            return if rows.size < SCAN_CHUNK
            after = rows.last.last(2)
          end
        end

        # Finds one entry of a set by its score and jid. @returns [String | Nil] its payload.
        def set_entry(set, score, jid)
          with do
            @db.value(
              "SELECT payload FROM @.jobs WHERE state = $1 AND run_at = $2 " \
              "AND @.json(payload) ->> 'jid' = $3",
              [set_state(set), score, jid]
            )
          end
        end

        # @returns [Array(String)] the names of the paused queues, sorted.
        def paused_queues
          with do
            @db.query(
              "SELECT queue FROM @.paused_queues ORDER BY queue"
            ).flatten
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # The reading side of the admin role of the SQLite store, used by Summary, the history API and the web
      # dashboard.
      module Admin
        FILTER = "(instr(json_extract(payload, '$.name'), ?) > 0 " \
          "OR instr(json_extract(payload, '$.jid'), ?) > 0)"
        SCAN_CHUNK = 1000
        # The entries after the last one read, in the order of the (state, run_at) index, which ends with the id.
        AFTER = "state = ? AND (run_at, id) > (?, ?) " \
          "ORDER BY run_at, id LIMIT #{SCAN_CHUNK}"
        private_constant :FILTER, :SCAN_CHUNK, :AFTER

        # @returns [Hash(Symbol, Integer)] processed, failures, scheduled, retry and dead.
        def counts
          with do |db|
            counters = db.execute("SELECT name, value FROM counters").to_h
            sets = db.execute(
              "SELECT state, count(*) FROM jobs " \
              "WHERE state IN ('scheduled', 'retry', 'dead') GROUP BY state"
            ).to_h
            COUNTERS.to_h { |name| [name.to_sym, counters[name].to_i] }
              .merge(SETS.to_h { |set| [set.to_sym, sets[set].to_i] })
          end
        end

        # @returns [Hash(String, Integer)] the size of every queue that holds jobs.
        def queue_sizes
          with do |db|
            db.execute(
              "SELECT queue, count(*) FROM jobs WHERE state = 'queued' " \
              "GROUP BY queue ORDER BY queue"
            ).to_h
          end
        end

        # Jobs waiting in a queue, next to run first. @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100, offset: 0)
          with do |db|
            db.execute(
              "SELECT payload FROM jobs WHERE state = 'queued' AND queue = ? " \
              "ORDER BY run_at, id LIMIT ? OFFSET ?",
              [name, limit, offset]
            ).flatten
          end
        end

        # Jobs in a set, soonest (or oldest) first; `reverse` gives the latest first, `filter` keeps only jobs whose
        # class name or jid contains the text. @returns [Array([String, Float])] payload and score.
        def set_entries(set, limit: 100, offset: 0, filter: nil, reverse: false)
          where = if filter
            "state = ? AND json_valid(payload) AND #{FILTER}"
          else
            "state = ?"
          end
          order = reverse ? "run_at DESC, id DESC" : "run_at, id"
          values = [
            set_state(set),
            *([filter, filter] if filter),
            limit,
            offset
          ]
          with do |db|
            db.execute(
              "SELECT payload, run_at FROM jobs WHERE #{where} " \
              "ORDER BY #{order} LIMIT ? OFFSET ?",
              values
            )
          end
        end

        # Yields every entry of a set, soonest first, reading it a chunk at a time after the last entry read, so that
        # entries moved meanwhile shift nothing and each read costs the same, whatever the set's size.
        # @yields {|payload, score| ...}
        # @returns [Enumerator] without a block.
        def each_set_entry(set)
          return enum_for(:each_set_entry, set) unless block_given?
          after = [-Float::INFINITY, 0]
          loop do
            values = [set_state(set), *after]
            rows = with do |db|
              db.execute(
                "SELECT payload, run_at, id FROM jobs WHERE #{AFTER}",
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
          with do |db|
            db.get_first_value(
              "SELECT payload FROM jobs WHERE #{BY_ENTRY}",
              [set_state(set), score, jid]
            )
          end
        end

        # @returns [Array(String)] the names of the paused queues, sorted.
        def paused_queues
          with do |db|
            db.execute("SELECT queue FROM paused_queues ORDER BY queue").flatten
          end
        end

        # A job's history, oldest first. @returns [Array([Float, Hash])] time and event.
        def history(jid)
          with do |db|
            id = db.get_first_value(
              "SELECT id FROM jobs WHERE json_extract(payload, '$.jid') = ? " \
              "ORDER BY id DESC LIMIT 1",
              [jid]
            )
            id ? db.events(id) : []
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # The reading and cleaning side of the SQLite store, used by Summary, Cleaner and the history API.
      module Admin
        SETS = %w[scheduled retry dead].freeze
        COUNTERS = %w[processed failures].freeze

        # @returns [Hash(Symbol, Integer)] processed, failures, scheduled, retry and dead.
        def counts
          with do |db|
            counters = db.execute("SELECT name, value FROM counters").to_h
            sets = db.execute("SELECT state, count(*) FROM jobs WHERE state IN ('scheduled', 'retry', 'dead') GROUP BY state").to_h
            COUNTERS.to_h { |name| [name.to_sym, counters[name].to_i] }.merge(SETS.to_h { |set| [set.to_sym, sets[set].to_i] })
          end
        end

        # @returns [Hash(String, Integer)] the size of every queue that holds jobs.
        def queue_sizes
          with { |db| db.execute("SELECT queue, count(*) FROM jobs WHERE state = 'queued' GROUP BY queue ORDER BY queue").to_h }
        end

        # @returns [Hash(String, String)] live process ids to their JSON descriptions.
        def processes
          with { |db| db.execute("SELECT id, info FROM processes WHERE expires_at > ? ORDER BY id", [Time.now.to_f]).to_h }
        end

        # Jobs waiting in a queue, next to run first. @returns [Array(String)] payloads.
        def queue_entries(name, limit: 100)
          with do |db|
            db.execute("SELECT payload FROM jobs WHERE state = 'queued' AND queue = ? ORDER BY run_at, id LIMIT ?", [name, limit]).flatten
          end
        end

        # Jobs in a set, soonest (or oldest) first. @returns [Array([String, Float])] payload and score.
        def set_entries(set, limit: 100)
          with { |db| db.execute("SELECT payload, run_at FROM jobs WHERE state = ? ORDER BY run_at, id LIMIT ?", [set_state(set), limit]) }
        end

        # A job's history, oldest first. @returns [Array([Float, Hash])] time and event.
        def history(jid)
          with do |db|
            id = db.get_first_value("SELECT id FROM jobs WHERE json_extract(payload, '$.jid') = ? ORDER BY id DESC LIMIT 1", [jid])
            id ? job_queue.events(id) : []
          end
        end

        def clear_queue(name)
          write { |queue_db| delete_jobs(queue_db.db, "state = 'queued' AND queue = ?", [name]) }
        end

        def clear_all_queues
          write { |queue_db| delete_jobs(queue_db.db, "state = 'queued'", []) }
        end

        def clear_set(set)
          write { |queue_db| delete_jobs(queue_db.db, "state = ?", [set_state(set)]) }
        end

        def reset_counter(counter)
          raise ArgumentError, "unknown counter #{counter.inspect}; use one of #{COUNTERS}" unless COUNTERS.include?(counter.to_s)
          write { |queue_db| queue_db.db.execute("DELETE FROM counters WHERE name = ?", [counter.to_s]) }
        end

        # Forgets every registered process; jobs held by processes that are gone go back to their queues first.
        def clear_processes
          dead_processes.each { |process| requeue(process) }
          write { |queue_db| queue_db.db.execute("DELETE FROM processes") }
        end

        # Deletes all of the store's data, jobs in flight and history included.
        def clear_all
          write do |queue_db|
            %w[events jobs processes].each { |table| queue_db.db.execute("DELETE FROM #{table}") }
            queue_db.db.execute("DELETE FROM counters WHERE name <> 'pushes'")
          end
        end

        private

        def delete_jobs(db, where, values)
          db.execute("DELETE FROM events WHERE job_id IN (SELECT id FROM jobs WHERE #{where})", values)
          db.execute("DELETE FROM jobs WHERE #{where}", values)
        end

        def set_state(set)
          raise ArgumentError, "unknown set #{set.inspect}; use one of #{SETS}" unless SETS.include?(set.to_s)
          set.to_s
        end
      end
    end
  end
end

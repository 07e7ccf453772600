# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Requests to quiet or stop a server process, sent from anywhere (the `jiggler quiet` command, the dashboard) and
      # taken by that process's heartbeat. A request nobody takes (its process is gone) is dropped after a minute.
      module Signals
        SIGNAL_TTL = 60
        private_constant :SIGNAL_TTL

        # Asks a process to quiet (stop fetching) or stop (finish and exit) at its next heartbeat.
        # @parameter process [String] its id.
        # @parameter signal [String] "quiet" or "stop".
        def signal_process(process, signal)
          now = Time.now.to_f
          write do |db|
            db.execute(
              "DELETE FROM process_signals WHERE at < ?",
              [now - SIGNAL_TTL]
            )
            db.execute(
              "INSERT INTO process_signals (process, signal, at) " \
              "VALUES (?, ?, ?)",
              [process, signal, now]
            )
          end
        end

        # Deletes the requests waiting (part of Store::SQLite#clear_all).
        def clear_signals
          write { |db| db.execute("DELETE FROM process_signals") }
        end

        # Takes the requests sent to a process, oldest first; each is taken once.
        # @returns [Array(String)]
        def take_signals(process)
          # A read first: a heartbeat finds none nearly always, and a read does not take the file's write lock.
          return [] unless with do |db|
            db.get_first_value(
              "SELECT 1 FROM process_signals WHERE process = ? LIMIT 1",
              [process]
            )
          end
          write do |db|
            rows = db.execute(
              "DELETE FROM process_signals WHERE process = ? " \
              "RETURNING rowid, signal",
              [process]
            )
            rows.sort.map(&:last)
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Requests to quiet or stop a server process, sent from anywhere (the `jiggler quiet` command,
      # the dashboard) and taken by that process's heartbeat. A request nobody takes (its process is
      # gone) is dropped after a minute.
      module Signals
        SIGNAL_TTL = 60
        private_constant :SIGNAL_TTL

        # Asks a process to quiet (stop fetching) or stop (finish and exit) at its next heartbeat.
        # @parameter process [String] its id.
        # @parameter signal [String] "quiet" or "stop".
        def signal_process(process, signal)
          now = Time.now.to_f
          write do
            @db.query(
              "DELETE FROM @.process_signals WHERE at < $1",
              [now - SIGNAL_TTL]
            )
            @db.query(
              "INSERT INTO @.process_signals (process, signal, at) " \
              "VALUES ($1, $2, $3)",
              [process, signal, now]
            )
          end
        end

        # Takes the requests sent to a process, oldest first; each is taken once.
        # @returns [Array(String)]
        def take_signals(process)
          rows = with do
            @db.query(
              "DELETE FROM @.process_signals WHERE process = $1 " \
              "RETURNING id, signal",
              [process]
            )
          end
          rows.sort.map(&:last)
        end
      end
    end
  end
end

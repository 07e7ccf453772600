# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # Requests to quiet or stop a server process, sent from anywhere (the `jiggler quiet` command, the dashboard) and
      # taken by that process's heartbeat. Each process's requests are a list next to its registration; a request
      # nobody takes (its process is gone) expires.
      module Signals
        SIGNAL_TTL = 60
        private_constant :SIGNAL_TTL

        # Asks a process to quiet (stop fetching) or stop (finish and exit) at its next heartbeat.
        # @parameter process [String] its id.
        # @parameter signal [String] "quiet" or "stop".
        def signal_process(process, signal)
          key = signals_key(process)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("RPUSH", key, signal)
              pipeline.call("EXPIRE", key, SIGNAL_TTL)
            end
          end
        end

        # Takes the requests sent to a process, oldest first; each is taken once.
        # @returns [Array(String)]
        def take_signals(process)
          key = signals_key(process)
          replies = with do |redis|
            redis.multi do |transaction|
              transaction.call("LRANGE", key, 0, -1)
              transaction.call("DEL", key)
            end
          end
          replies.first
        end

        # Deletes the requests waiting for registered processes (part of Store::Redis#clear_all; any other expires
        # within a minute): found through the registry, so before it goes.
        def clear_signals
          ids = registered_processes
          if ids.any?
            with do |redis|
              redis.call_v(["DEL", *ids.map { |id| signals_key(id) }])
            end
          end
        end

        private

        def signals_key(process) = "#{keys.process(process)}:signals"
      end
    end
  end
end

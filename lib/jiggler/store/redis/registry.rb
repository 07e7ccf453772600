# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # The process registry of the Redis store: a sorted set of process ids, and per live process a key holding its
      # description that expires unless the process beats again. A registered id whose key expired is a dead process.
      module Registry
        # Registers a live process, or refreshes its registration.
        # @parameter process [String] its id.
        # @parameter info [String] JSON shown by the summary.
        # @parameter ttl [Numeric] seconds until the registration expires without another heartbeat.
        def beat(process, info, ttl)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("ZADD", @keys.processes, Time.now.to_f, process)
              pipeline.call(
                "SET", @keys.process(process), info, "PX", (ttl * 1000).to_i
              )
            end
          end
        end

        # Removes a process's registration; its in-flight hash, if any jobs are left there, stays for recovery.
        def unregister(process)
          with do |redis|
            redis.pipelined do |pipeline|
              pipeline.call("ZREM", @keys.processes, process)
              pipeline.call("DEL", @keys.process(process))
            end
          end
        end

        # The live processes and what each last reported.
        # @returns [Hash(String, String)] process id to its JSON description.
        def processes = registrations.compact

        # The registered processes whose registration expired: they stopped beating, so they are dead.
        # @returns [Array(String)] their ids.
        def dead_processes
          registrations.filter_map { |id, info| id if info.nil? }
        end

        # Drops a dead process from the registry once it holds no job in flight.
        # @returns [Boolean] whether it was dropped.
        def forget(process)
          return false unless in_flight_count(process).zero?
          with { |redis| redis.call("ZREM", @keys.processes, process) == 1 }
        end

        # Forgets every registered process. Jobs held by processes that are gone go back to their queues first; live
        # processes keep theirs and register again with their next heartbeat.
        def clear_processes
          ids = registered_processes
          live = processes.keys
          (ids - live).each { |id| requeue(id) }
          with do |redis|
            redis.call_v(
              ["DEL", @keys.processes, *ids.map { |id| @keys.process(id) }]
            )
          end
        end

        private

        # Every registered process id with its description, nil where the registration expired.
        def registrations
          ids = registered_processes
          return {} if ids.empty?
          ids.zip(
            with do |redis|
              redis.call_v(["MGET", *ids.map { |id| @keys.process(id) }])
            end
          ).to_h
        end
      end
    end
  end
end

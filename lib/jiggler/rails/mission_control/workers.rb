# frozen_string_literal: true

require "digest"
require_relative "../../payload"
require_relative "location"

module Jiggler
  module Rails
    module MissionControl
      # The live jiggler processes as Mission Control's workers, and the jobs they run now, from the
      # process registry: each process reports its running jobs with its heartbeat, and holds their
      # payloads in flight.
      class Workers
        # The fields of a process's report shown as its configuration.
        CONFIGURATION =
          %w[concurrency timeout queues pid started_at quiet].freeze

        # A worker's id in Mission Control: a digest of the process id, which holds dots and commas
        # that a URL segment cannot carry.
        # @parameter process [String] the process id in the registry.
        def self.id(process) = Digest::SHA256.hexdigest(process)[0, 16]

        # @parameter store [Store::Redis | Store::SQLite]
        def initialize(store)
          @store = store
        end

        # The live processes, by name.
        # @returns [Array(Hash)] id, name, hostname, last_heartbeat_at, configuration and raw_data.
        def list
          @list ||= processes.map { |process, info| worker(process, info) }
        end

        # The queues the live processes work, each once.
        # @returns [Array(String)]
        def queue_names
          processes
            .flat_map { |_, info| info["queues"].to_s.split(",") }
            .uniq
        end

        # @returns [Hash | Nil] the worker of that id.
        def find(id) = list.find { |worker| worker[:id] == id }

        # The jobs the live processes run now (not those fetched ahead and waiting for a worker).
        # @parameter worker_id [String | Nil] only this worker's.
        # @returns [Array(Location)]
        def running(worker_id = nil)
          processes.flat_map do |process, info|
            id = Workers.id(process)
            (worker_id.nil? || worker_id == id) ? jobs(process, info, id) : []
          end
        end

        private

        # The registry's processes, reports parsed strictly; unreadable ones are skipped.
        def processes
          @processes ||= @store.processes.filter_map do |process, json|
            info = Payload.parse(json)
            [process, info] if info.is_a?(Hash)
          rescue Payload::MalformedError
            nil
          end.sort_by { |process, info| [info["name"].to_s, process] }
        end

        def worker(process, info)
          {
            id: Workers.id(process),
            name: info["name"] || process,
            hostname: info["hostname"],
            last_heartbeat_at: (
              if info["heartbeat"].is_a?(Numeric)
                Time.at(info["heartbeat"]).utc
              end
            ),
            configuration: info.slice(*CONFIGURATION),
            raw_data: info.except("current_jobs").merge("id" => process)
          }
        end

        # A process's running jobs, with their payloads as held in flight. A job its last heartbeat
        # reports that it no longer holds has finished since; a process that holds nothing in flight
        # (at-most-once mode) shows none.
        def jobs(process, info, id)
          held = @store.in_flight(process).to_h do |fetched|
            [fetched.handle.to_s, fetched.payload]
          end
          current = info["current_jobs"].is_a?(Hash) ? info["current_jobs"] : {}
          current.filter_map do |handle, work|
            next unless work.is_a?(Hash) && held.key?(handle)
            Location.new(place: :running, name: process, payload: held[handle],
              started_at: work["run_at"], worker_id: id)
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../../set_actions"

module Jiggler
  module Rails
    module MissionControl
      # Mission Control's actions on jobs it listed, done as the dashboard's buttons do them: a
      # failed job (retry or dead set) is retried by moving it to its queue now, a scheduled job is
      # dispatched the same way, and a discarded job is deleted from its queue or set, a unique
      # job's lock given back. Each job is found again by its Location; one that moved meanwhile is
      # skipped, and not counted.
      class Actions
        # @parameter store [Store::Redis | Store::SQLite]
        def initialize(store)
          @store = store
        end

        # Moves jobs of the sets to their queues, to run now: failed jobs retried, scheduled ones
        # dispatched.
        # @parameter jobs [Array(ActiveJob::JobProxy)] jobs of the scheduled, retry and dead sets.
        # @returns [Integer] how many moved.
        def rerun(jobs)
          by_set(jobs) do |set, entries, _|
            SetActions.run(@store, set, entries)
          end
        end

        # Deletes jobs from their queues and sets.
        # @parameter jobs [Array(ActiveJob::JobProxy)]
        # @returns [Integer] how many were deleted.
        # @raises [ActiveJob::Errors::InvalidOperation] for a running job, which no store call can
        #   take back.
        def discard(jobs)
          running = jobs.find { |job| job.position.place == :running }
          if running
            raise ActiveJob::Errors::InvalidOperation,
              "a running job cannot be discarded"
          end
          queued, others = jobs.partition { |job| job.position.place == :queue }
          deleted = queued.count { |job| delete_queued(job.position) }
          deleted + by_set(others) do |set, entries, payloads|
            SetActions.delete(@store, set, entries, payloads: payloads)
          end
        end

        private

        def delete_queued(location)
          @store.delete_queue_entry(location.name, location.payload)
        end

        # Calls the block once per set with the jobs' entries and payloads. @returns [Integer] the
        # sum it returns.
        def by_set(jobs)
          jobs.group_by { |job| job.position.place }.sum do |set, group|
            entries = group.map do |job|
              job.position.entry(job.raw_data["jid"])
            end
            yield set, entries, group.map { |job| job.position.payload }
          end
        end
      end
    end
  end
end

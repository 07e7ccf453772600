# frozen_string_literal: true

require_relative "payload"

module Jiggler
  # What `Jiggler.summary` returns: counters, set sizes, live processes, the queues that hold jobs, the batch items
  # waiting, the jobs waiting for a concurrency slot and the recurring tasks.
  class Summary
    # @parameter store [Store::Redis | Store::SQLite]
    def initialize(store)
      @store = store
    end

    # @returns [Hash(String, Object)] with the keys of the example in docs/operations.md.
    def to_h
      counts = @store.counts
      {
        "retry_jobs_count" => counts[:retry],
        "dead_jobs_count" => counts[:dead],
        "scheduled_jobs_count" => counts[:scheduled],
        "failures_count" => counts[:failures],
        "processed_count" => counts[:processed],
        "processes" => processes,
        "queues" => @store.queue_sizes,
        "batches" => batches,
        "waiting" => @store.waiting_counts,
        "recurring" => recurring
      }
    end

    private

    # Items waiting to be batched, by queue and class.
    def batches
      @store.batch_sizes
        .each_with_object({}) do |(queue, name, count, _oldest), result|
        (result[queue] ||= {})[name] = count
      end
    end

    # The recurring tasks servers run: schedule, last run (epoch seconds or nil) and whether enabled.
    def recurring
      @store.recurring_tasks
        .each_with_object({}) do |(name, json, last_run, enabled), result|
        settings = Payload.parse(json)
        result[name] = {
          "schedule" => (settings["schedule"] if settings.is_a?(Hash)),
          "last_run" => last_run,
          "enabled" => enabled
        }
      rescue Payload::MalformedError
        result[name] = {
          "schedule" => nil,
          "last_run" => last_run,
          "enabled" => enabled
        }
      end
    end

    def processes
      @store.processes.each_with_object({}) do |(id, json), result|
        info = Payload.parse(json)
        result[id] = info if info.is_a?(Hash)
      rescue Payload::MalformedError
        next
      end
    end
  end
end

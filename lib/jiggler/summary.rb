# frozen_string_literal: true

require_relative "payload"

module Jiggler
  # What `Jiggler.summary` returns: counters, set sizes, live processes, the queues that hold jobs and the batch items
  # waiting.
  class Summary
    # @parameter store [Store::Redis | Store::SQLite]
    def initialize(store)
      @store = store
    end

    # @returns [Hash(String, Object)] with the keys of jiggler's README example.
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
        "batches" => batches
      }
    end

    private

    # Items waiting to be batched, by queue and class.
    def batches
      @store.batch_sizes.each_with_object({}) do |(queue, name, count, _oldest), result|
        (result[queue] ||= {})[name] = count
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

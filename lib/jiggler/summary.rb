# frozen_string_literal: true

require "oj"

module Jiggler
  # What `Jiggler.summary` returns: counters, set sizes, live processes and the queues that hold jobs.
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
        "queues" => @store.queue_sizes
      }
    end

    private

    def processes
      @store.processes.each_with_object({}) do |(id, json), result|
        info = Oj.load(json, mode: :strict)
        result[id] = info if info.is_a?(Hash)
      rescue Oj::ParseError
        next
      end
    end
  end
end

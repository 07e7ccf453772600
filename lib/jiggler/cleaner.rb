# frozen_string_literal: true

module Jiggler
  # Deletes jiggler's data: one queue, all queues, a set, a counter, the process registry, or everything.
  # Reached as `Jiggler.config.cleaner`.
  class Cleaner
    # @parameter store [Store::Redis | Store::SQLite]
    def initialize(store)
      @store = store
    end

    # Deletes a queue and its jobs: `prune_queue("mailers")`, `prune_queue(name: "mailers")` (jiggler 0.1.0's form)
    # or `prune_queue(queue: "mailers")`.
    def prune_queue(queue_name = nil, name: nil, queue: nil)
      queue_name ||= name || queue
      if queue_name.nil? || queue_name.to_s.empty?
        raise ArgumentError,
          "prune_queue needs a queue name: prune_queue(\"default\")"
      end
      @store.clear_queue(queue_name.to_s)
    end

    # Deletes every queue and its jobs.
    def prune_all_queues = @store.clear_all_queues

    # Empties the scheduled set.
    def prune_scheduled_set = @store.clear_set(:scheduled)

    # Empties the retry set.
    def prune_retries_set = @store.clear_set(:retry)

    # Empties the dead set.
    def prune_dead_set = @store.clear_set(:dead)

    # Sets the processed counter to zero.
    def prune_processed_counter = @store.reset_counter(:processed)

    # Sets the failures counter to zero.
    def prune_failures_counter = @store.reset_counter(:failures)

    # Forgets all registered processes (live ones register again on their next heartbeat).
    def prune_all_processes = @store.clear_processes

    # Deletes all of jiggler's data: queues, sets, counters and processes.
    def prune_all = @store.clear_all
  end
end

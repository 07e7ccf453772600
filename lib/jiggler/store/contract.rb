# frozen_string_literal: true

module Jiggler
  module Store
    # The store contract's methods by role, as contract.md (beside this file) documents them: every store implements
    # every method of every role, and the optional ones where OPTIONAL says. test/jiggler/store/contract_test.rb holds
    # each store and contract.md to this list, so a method added to one store, or to the document, and not here fails
    # there. A new store is done when it passes that test and the shared specs (test/support/store_contract.rb).
    module Contract
      ROLES = {
        "The queue path" => %i[push schedule fetch fail requeue checkpoint
          in_flight in_flight_count next_due enqueue_due wait_for_wake],
        "The process registry" => %i[beat unregister processes dead_processes
          forget clear_processes],
        "Long jobs: cancel requests" => %i[request_cancel cancel_requests
          wait_for_cancels cancel_waiting],
        "Batches and results" => %i[add_to_batch form_batch batch_names
          batch_sizes save_results result],
        "Workflows" => %i[create_workflow step_died complete_step step_results
          workflow_graph workflow_steps],
        "Metrics" => %i[add_metrics metrics metrics_totals],
        "Signals" => %i[signal_process take_signals],
        "Admin: reads" => %i[counts queue_sizes queue_entries set_entries
          set_entry paused_queues slot_waiter batch_item waiting_step
          rate_reservation],
        "Admin: actions" => %i[delete_set_entries enqueue_set_entries
          kill_set_entries delete_queue_entry pause_queue resume_queue
          clear_queue clear_all_queues clear_set reset_counter clear_all],
        "Connection" => %i[description ping close with],
        "Recurring tasks" => %i[enqueue_recurring save_recurring
          recurring_tasks enable_recurring],
        "Unique jobs" => %i[enqueue_unique unlock lock_holder],
        "Concurrency and rate limits: how a job waits" => %i[acquire_slot
          release_slot promote_expired waiting_counts acquire_rate]
      }.freeze

      # Methods only some stores have, with the stores that have them; callers ask `supports?` first.
      OPTIONAL = {
        fetch_when_pushed: %w[Redis],
        clear_batches: %w[Redis],
        history: %w[SQLite]
      }.freeze

      module_function

      # Whether a store has an optional method.
      # @parameter store [Object] a store.
      # @parameter method [Symbol] one of OPTIONAL's.
      # @raises [KeyError] for a method that is not optional: every store has it.
      def supports?(store, method)
        OPTIONAL.fetch(method) && store.respond_to?(method)
      end

      # Every method of every role. @returns [Array(Symbol)]
      def required = ROLES.values.flatten
    end
  end
end

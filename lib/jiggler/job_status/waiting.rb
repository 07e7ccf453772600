# frozen_string_literal: true

module Jiggler
  module JobStatus
    # Where a job waits outside the queues and sets, read through the store's lookups by jid (contract.md, "Admin:
    # reads"): for a concurrency slot, in a batch not formed yet, as a workflow step held for its dependencies. A job
    # deferred by its rate limit is a scheduled job holding a reservation in its key's plan.
    module Waiting
      module_function

      # @returns [Hash | Nil]
      def lookup(store, jid)
        for_slot(store, jid) || in_batch(store, jid) ||
          for_dependencies(store, jid)
      end

      def for_slot(store, jid)
        found = store.slot_waiter(jid) or return
        key, queue, payload, position = found
        JobStatus.described("waiting", payload).merge(
          "for" => "concurrency",
          "key" => key,
          "queue" => queue,
          "position" => position
        )
      end

      def in_batch(store, jid)
        found = store.batch_item(jid) or return
        queue, name, payload = found
        JobStatus.described("batched", payload)
          .merge("batch" => name, "queue" => queue)
      end

      def for_dependencies(store, jid)
        found = store.waiting_step(jid) or return
        workflow, left, payload = found
        JobStatus.described("waiting", payload).merge(
          "for" => "dependencies",
          "workflow" => workflow,
          "dependencies" => left
        )
      end

      # A scheduled job that its rate limit deferred: the key's plan holds its reservation until it starts.
      # @parameter job [Hash] its parsed payload.
      # @returns [Hash | Nil] what to add to its scheduled status.
      def for_rate(store, jid, job)
        rate = job["limits"]["rate"] if job["limits"].is_a?(Hash)
        unless rate.is_a?(Hash) &&
            store.rate_reservation(rate["key"].to_s, jid)
          return
        end
        {"state" => "waiting", "for" => "rate", "key" => rate["key"].to_s}
      end
    end
  end
end

# frozen_string_literal: true

require_relative "cancel_waiting"

module Jiggler
  module Store
    class Redis
      # Finds a job by its jid where it waits outside the queues and sets (Jiggler.status): for a concurrency slot,
      # in a batch, as a workflow step held for its dependencies, or for a rate's budget. A job's limit key, batch
      # and workflow are in its payload, which the caller does not have, so each read walks the index of those
      # structures (`limit:keys`, `batches`, the running workflows) and looks in each, through CancelWaiting's
      # searches: no more than the jobs waiting there, as a queue is read.
      module Lookups
        # Workflows read per pipelined call.
        PAGE = 1_000
        private_constant :PAGE

        # @returns [[String, String, String, Integer] | Nil] limit key, queue, payload and how many jobs wait before
        #   it, for a job waiting for a slot.
        def slot_waiter(jid)
          key, entry, position = slot_waiting(jid)
          return unless key
          queue, _, payload = entry.split("|", 3)
          [key, queue, payload, position]
        end

        # @returns [[String, String, String] | Nil] queue, class name and payload of a batch item not yet in a batch.
        def batch_item(jid)
          batch, payload = batch_member(jid)
          [*batch.split("|", 2), payload] if batch
        end

        # Looks in the running workflows (their index's +inf entries), a pipelined HMGET per page of them.
        # @returns [[String, Integer, String] | Nil] workflow id, dependencies left and payload of a step that waits.
        def waiting_step(jid)
          ids = with do |redis|
            redis.call("ZRANGE", @keys.workflows, "+inf", "+inf", "BYSCORE")
          end
          ids.each_slice(PAGE) do |slice|
            replies = with do |redis|
              redis.pipelined do |pipeline|
                slice.each do |id|
                  pipeline.call(
                    "HMGET", @keys.workflow(id), "n:#{jid}", "p:#{jid}"
                  )
                end
              end
            end
            index = replies.index { |left, payload| left && payload } or next
            left, payload = replies[index]
            return [slice[index], Integer(left), payload]
          end
          nil
        end

        # @returns [Float | Nil] when a job that a rate limit deferred is due, while it holds its reservation.
        def rate_reservation(key, jid)
          with do |redis|
            redis.call("ZSCORE", @keys.limit("plan", key), "r:#{jid}")
          end&.then { |at| Float(at) }
        end
      end
    end
  end
end

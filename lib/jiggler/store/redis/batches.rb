# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # Batch items in Redis. A batch's items wait in a sorted set scored by enqueue time (ties keep enqueue order: a
      # call's jids differ only in a rising counter); the set `batches` names the batches that have items, so nothing
      # needs a SCAN.
      module Batches
        # Adds items to a batch.
        # @parameter queue [String]
        # @parameter name [String] the job class's name.
        # @parameter payloads [Array(String)]
        # @parameter now [Float] epoch seconds, their score.
        # @returns [Integer] how many items the batch holds now.
        def add_to_batch(queue, name, payloads, now)
          key = @keys.batch(@keys.batch_name(queue, name))
          with do |redis|
            payloads.each_slice(PUSH_CHUNK).map do |chunk|
              redis.multi do |transaction|
                transaction.call(
                  "SADD",
                  @keys.batches,
                  @keys.batch_name(queue, name)
                )
                transaction.call_v([
                  "ZADD",
                  key,
                  *chunk.flat_map { |payload| [now, payload] }
                ])
                transaction.call("ZCARD", key)
              end.last
            end.last
          end
        end

        # Turns a batch's oldest items (at most `size`) into one batch job in their queue, if there are `size` of
        # them or the oldest was enqueued before `due_before`.
        # @yields {|items| ...} the items' payloads, oldest first; returns the Batch::Formed to write.
        # @returns [Integer] how many items it took (0 when the batch is not due, or another process took them).
        def form_batch(queue, name, size:, due_before:, now:)
          batch = @keys.batch_name(queue, name)
          entries = with do |redis|
            redis.call(
              "ZRANGE", @keys.batch(batch), 0, size - 1, "WITHSCORES"
            )
          end
          if entries.empty? ||
              (entries.size < size && entries.first.last >= due_before)
            return 0
          end
          items = entries.map(&:first)
          formed = yield(items)
          keys = [
            @keys.batch(batch),
            @keys.batches,
            @keys.queues,
            @keys.queue(queue),
            @keys.dead
          ]
          argv = [
            batch,
            queue,
            @keys.wake,
            formed.payload.to_s,
            now,
            items.size,
            *items,
            *formed.unreadable.map(&:last)
          ]
          with { |redis| SCRIPTS[:batch].call(redis, keys, argv) }
        end

        # The batches that have items waiting.
        # @returns [Array([String, String])] queue and class name of each.
        def batch_names
          with { |redis| redis.call("SMEMBERS", @keys.batches) }
            .sort
            .map { |batch| batch.split("|", 2) }
        end

        # The batches that have items waiting, with how many and since when.
        # @returns [Array([String, String, Integer, Float])] queue, class name, items and the oldest's enqueue time.
        def batch_sizes
          names = batch_names
          replies = with do |redis|
            redis.pipelined do |pipeline|
              names.each do |queue, name|
                key = @keys.batch(@keys.batch_name(queue, name))
                pipeline.call("ZCARD", key)
                pipeline.call("ZRANGE", key, 0, 0, "WITHSCORES")
              end
            end
          end
          names.zip(replies.each_slice(2))
            .filter_map do |(queue, name), (count, oldest)|
              [queue, name, count, oldest.first.last] if count.positive?
            end
        end

        # Deletes the items waiting in the batches of one queue, or of every queue.
        def clear_batches(queue = nil)
          names = batch_names
            .select { |batch_queue, _| queue.nil? || batch_queue == queue }
            .map { |pair| @keys.batch_name(*pair) }
          return if names.empty?
          with do |redis|
            redis.multi do |transaction|
              transaction.call_v(
                ["DEL", *names.map { |batch| @keys.batch(batch) }]
              )
              transaction.call_v(["SREM", @keys.batches, *names])
            end
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Batch items in PostgreSQL: a waiting item is a job row in state "batching" with its queue,
      # class (column `batch`) and enqueue time; a formed batch is a new queued job, and its items'
      # rows are deleted with it.
      module Batches
        ITEMS = "SELECT id, payload, run_at FROM @.jobs " \
          "WHERE state = 'batching' AND queue = $1 AND batch = $2 " \
          "ORDER BY run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED"
        SIZE = "SELECT count(*) FROM @.jobs " \
          "WHERE state = 'batching' AND queue = $1 AND batch = $2"
        KILL = "UPDATE @.jobs SET state = 'dead', run_at = $1, payload = $2 " \
          "WHERE id = $3"
        private_constant :ITEMS, :SIZE, :KILL

        # Adds items to a batch. @returns [Integer] how many items the batch holds now.
        def add_to_batch(queue, name, payloads, now)
          write do
            insert(
              "batching",
              payloads.map { |payload| [queue, now, payload] },
              batch: name
            )
            @db.value(SIZE, [queue, name])
          end
        end

        # Turns a batch's oldest items (at most `size`) into one queued batch job, if there are
        # `size` of them or the oldest was enqueued before `due_before`.
        # @yields {|items| ...} the items' payloads, oldest first; returns the Batch::Formed to
        #   write.
        # @returns [Integer] how many items it took.
        def form_batch(queue, name, size:, due_before:, now:)
          write do
            rows = @db.query(ITEMS, [queue, name, size])
            if rows.empty? ||
                (rows.size < size && rows.first.last >= due_before)
              next 0
            end
            batch_items(queue, rows, yield(rows.map { |_, item| item }), now)
            rows.size
          end
        end

        # @returns [Array([String, String])] queue and class name of each batch with items waiting.
        def batch_names = batch_sizes.map { |queue, name| [queue, name] }

        # @returns [Array([String, String, Integer, Float])] queue, class name, items and the
        #   oldest's enqueue time.
        def batch_sizes
          with do
            @db.query(
              "SELECT queue, batch, count(*), min(run_at) FROM @.jobs " \
              "WHERE state = 'batching' " \
              "GROUP BY queue, batch ORDER BY queue, batch"
            )
          end
        end

        private

        def batch_items(queue, rows, formed, now)
          dead = formed.unreadable.to_h
          if formed.payload
            insert("queued", [[queue, now, formed.payload]])
            announce("queues")
          end
          rows.each do |id, item, _|
            unless dead.key?(item)
              next @db.query("DELETE FROM @.jobs WHERE id = $1", [id])
            end
            @db.query(KILL, [now, @db.bytes(dead[item]), id])
          end
        end
      end
    end
  end
end

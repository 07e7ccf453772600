# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Batch items in SQLite. A waiting item is a job row in state "batching" with its queue, class (column `batch`)
      # and enqueue time in columns; once in a batch it becomes "batched", kept with its history like a finished job,
      # and the batch is a new queued job.
      module Batches
        # Adds items to a batch. @returns [Integer] how many items the batch holds now.
        def add_to_batch(queue, name, payloads, now)
          write do |db|
            insert(
              db,
              "batching",
              payloads.map { |payload| [queue, now, payload] },
              "enqueued",
              batch: name
            )
            db.get_first_value(
              "SELECT count(*) FROM jobs " \
              "WHERE state = 'batching' AND queue = ? AND batch = ?",
              [queue, name]
            )
          end
        end

        # Turns a batch's oldest items (at most `size`) into one queued batch job, if there are `size` of them or the
        # oldest was enqueued before `due_before`.
        # @yields {|items| ...} the items' payloads, oldest first; returns the Batch::Formed to write.
        # @returns [Integer] how many items it took.
        def form_batch(queue, name, size:, due_before:, now:)
          write do |db|
            rows = db.execute(
              "SELECT id, payload, run_at FROM jobs " \
              "WHERE state = 'batching' AND queue = ? AND batch = ? " \
              "ORDER BY run_at, id LIMIT ?",
              [queue, name, size]
            )
            if rows.empty? ||
                (rows.size < size && rows.first.last >= due_before)
              next 0
            end
            batch_items(
              db,
              queue,
              rows,
              yield(rows.map { |_, item| item }),
              now
            )
            rows.size
          end
        end

        # @returns [Array([String, String])] queue and class name of each batch with items waiting.
        def batch_names = batch_sizes.map { |queue, name| [queue, name] }

        # @returns [Array([String, String, Integer, Float])] queue, class name, items and the oldest's enqueue time.
        def batch_sizes
          with do |db|
            db.execute(
              "SELECT queue, batch, count(*), min(run_at) FROM jobs " \
              "WHERE state = 'batching' " \
              "GROUP BY queue, batch ORDER BY queue, batch"
            )
          end
        end

        private

        def batch_items(db, queue, rows, formed, now)
          dead = formed.unreadable.to_h
          ids = rows.filter_map { |id, item, _| id unless dead.key?(item) }
          if formed.payload
            batch_id = insert(
              db,
              "queued",
              [[queue, now, formed.payload]],
              "enqueued"
            ).first
            db.execute(
              "UPDATE jobs SET state = 'batched', run_at = ? " \
              "WHERE id IN (#{(["?"] * ids.size).join(", ")})",
              [now, *ids]
            )
            db.add_events(
              ids.map do |id|
                [id, {"type" => "batched", "batch" => formed.jid}]
              end,
              at: now
            )
            db.add_event(
              batch_id,
              {"type" => "batch", "items" => ids.size},
              at: now
            )
            count(db, "pushes", 1)
          end
          rows.each do |id, item, _|
            next unless dead.key?(item)
            db.execute(
              "UPDATE jobs SET state = 'dead', run_at = ?, payload = ? " \
              "WHERE id = ?",
              [now, dead[item], id]
            )
            db.add_event(id, {"type" => "dead"}, at: now)
          end
        end
      end
    end
  end
end

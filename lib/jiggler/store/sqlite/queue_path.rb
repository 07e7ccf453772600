# frozen_string_literal: true

require_relative "../fetched"

module Jiggler
  module Store
    class SQLite
      # The queue path of the SQLite store (see ../contract.md): a job is one row whose state says where it is
      # (queued, in_flight with its owner, scheduled, retry, dead or done), its id is the handle of a Fetched, and each
      # move is one short transaction that also records the job's history as events.
      module QueuePath
        # Appends jobs to a queue.
        def push(queue, payloads)
          now = Time.now.to_f
          write do |db|
            insert(
              db,
              "queued",
              payloads.map { |payload| [queue, now, payload] },
              "enqueued"
            )
            count(db, "pushes", payloads.size)
          end
        end

        # Adds jobs to the scheduled set, announcing them to idle schedulers when one is due sooner than the others.
        # @parameter entries [Array([Float, String])] run-at time and payload.
        def schedule(entries)
          write do |db|
            earliest = earliest_due(db)
            # The queue is known when the job is due.
            insert(
              db,
              "scheduled",
              entries.map { |at, payload| [nil, at, payload] },
              "scheduled"
            )
            if entries.any? &&
                (earliest.nil? || entries.map(&:first).min < earliest)
              count(db, "schedules", 1)
            end
          end
        end

        # Acknowledges finished jobs and takes up to `limit` new ones, highest priority queue first; paused queues are
        # skipped.
        # @returns [Array(Fetched)] handles are row ids.
        def fetch(process, queues, limit:, acks: [], reliable: true)
          write do |db|
            acknowledge(db, process, acks, reliable)
            fetched = []
            queues.each do |queue|
              break if limit <= 0
              rows = take(db, process, queue, limit, reliable)
              rows.each do |id, payload|
                fetched << Fetched.new(id, queue, payload)
              end
              limit -= rows.size
            end
            started = {"type" => "started", "process" => process}
            if reliable
              db.add_events(fetched.map { |job| [job.handle, started] })
            end
            fetched
          end
        end

        # Moves failed jobs out of flight into the retry or the dead set, and counts the failures; a snoozed job goes
        # to the scheduled set (announced) and a cancelled one to the dead set, neither counted as a failure.
        # @parameter failures [Array(Failed)]
        # @returns [Integer] how many moved (a job no longer in flight is skipped).
        def fail(process, failures, reliable:, dead_cutoff:, dead_max:)
          write do |db|
            moved = failures.select do |failed|
              fail_one(db, process, failed, reliable)
            end
            count(db, "failures", moved.count(&:failure?))
            if moved.any? { |failed| failed.set == :scheduled }
              count(db, "schedules", 1)
            end
            trim_dead(db, dead_cutoff, dead_max) if failures.any?(&:dead?)
            moved.size
          end
        end

        # Puts jobs a process holds in flight back at the head of their queues, each exactly once.
        # @parameter jobs [Array(Fetched) | Nil] the jobs, each with the payload to push; nil: every job the process
        #   holds, as recorded.
        def requeue(process, jobs = nil)
          write do |db|
            jobs ||= in_flight(process)
            jobs.sum do |job|
              db.execute(
                "UPDATE jobs SET state = 'queued', owner = NULL, " \
                "payload = coalesce(?, payload) " \
                "WHERE id = ? AND state = 'in_flight' AND owner = ?",
                [job.payload, job.handle, process]
              )
              moved = db.changes
              if moved == 1
                db.add_event(
                  job.handle,
                  {"type" => "requeued", "process" => process}
                )
              end
              moved
            end.tap { |moved| count(db, "pushes", moved) if moved.positive? }
          end
        end

        # The jobs a process holds in flight. @returns [Array(Fetched)]
        def in_flight(process)
          rows = with do |db|
            db.execute(
              "SELECT id, queue, payload FROM jobs " \
              "WHERE owner = ? AND state = 'in_flight'",
              [process]
            )
          end
          rows.map { |id, queue, payload| Fetched.new(id, queue, payload) }
        end

        def in_flight_count(process)
          with do |db|
            db.get_first_value(
              "SELECT count(*) FROM jobs " \
              "WHERE owner = ? AND state = 'in_flight'",
              [process]
            )
          end
        end

        # Rewrites the payload of a job `process` holds in flight (an iterable job's checkpoint), only while it holds
        # it: what a reaper or a requeue moves from then on carries that payload.
        # @parameter handle [Integer] the job's row id.
        # @returns [Boolean] false when the job is no longer in flight for `process`.
        def checkpoint(process, handle, payload)
          write do |db|
            db.execute(
              "UPDATE jobs SET payload = ? " \
              "WHERE id = ? AND state = 'in_flight' AND owner = ?",
              [payload, handle, process]
            )
            db.changes == 1
          end
        end

        # When the earliest scheduled job or retry is due. @returns [Float | Nil] epoch seconds; nil when there is none.
        def next_due = with { |db| earliest_due(db) }

        # Moves due scheduled jobs and retries where the block says.
        # @yields {|from, payload| ...} :scheduled or :retry, and the entry; returns its JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_due(now, &destination)
          write do |db|
            due = db.execute(
              "SELECT id, state, payload FROM jobs " \
              "WHERE state IN ('scheduled', 'retry') AND run_at <= ?",
              [now]
            )
            due.each do |id, state, payload|
              enqueue_one(db, id, state.to_sym, payload, now, &destination)
            end
            count(db, "pushes", due.size) if due.any?
            prune(db, now)
            due.size
          end
        end

        private

        def take(db, process, queue, limit, reliable)
          ids = db.execute(
            "SELECT id, payload FROM jobs " \
            "WHERE state = 'queued' AND queue = ? AND NOT EXISTS " \
            "(SELECT 1 FROM paused_queues WHERE paused_queues.queue = ?) " \
            "ORDER BY run_at, id LIMIT ?",
            [queue, queue, limit]
          )
          return ids if ids.empty?
          marks = (["?"] * ids.size).join(", ")
          if reliable
            db.execute(
              "UPDATE jobs SET state = 'in_flight', owner = ? " \
              "WHERE id IN (#{marks})",
              [process, *ids.map(&:first)]
            )
          else
            db.delete_where("id IN (#{marks})", ids.map(&:first))
          end
          ids
        end

        def acknowledge(db, process, ids, reliable)
          return if ids.empty?
          return count(db, "processed", ids.size) unless reliable
          now = Time.now.to_f
          finished = ids.each_slice(CHUNK).sum do |slice|
            done = db.execute(
              "UPDATE jobs SET state = 'done', owner = NULL, run_at = ? " \
              "WHERE id IN (#{(["?"] * slice.size).join(", ")}) " \
              "AND state = 'in_flight' AND owner = ? RETURNING id",
              [now, *slice, process]
            )
            db.add_events(done.map { |(id)| [id, {"type" => "done"}] }, at: now)
            done.size
          end
          # An acknowledgement sent again after a lost reply counts once.
          count(db, "processed", finished)
        end

        def fail_one(db, process, failed, reliable)
          set, id = failed.state, failed.fetched.handle
          if reliable
            db.execute(
              "UPDATE jobs " \
              "SET state = ?, run_at = ?, payload = ?, owner = NULL " \
              "WHERE id = ? AND state = 'in_flight' AND owner = ?",
              [set, failed.at, failed.payload, id, process]
            )
            # requeued elsewhere meanwhile: it must not be in two places
            return false unless db.changes == 1
          else
            # At-most-once jobs left the table when they were fetched.
            id = insert(
              db,
              set,
              [[failed.fetched.queue, failed.at, failed.payload]]
            ).first
          end
          db.add_event(id, failed_event(failed))
          db.add_event(id, {"type" => "dead"}) if failed.set == :dead
          true
        end

        # The history event of a failure: the attempt and error the payload records.
        def failed_event(failed)
          job = Payload.load(failed.payload)
          if failed.set == :scheduled
            return {"type" => "snoozed", "until" => failed.at}
          end
          if failed.set == :cancelled
            return {"type" => "cancelled", "by" => job.dig("cancelled", "by")}
          end
          {
            "type" => "failed",
            "attempt" => job["attempt"],
            "error_class" => job["error_class"],
            "error_message" => job["error_message"]
          }
        rescue Payload::MalformedError
          {"type" => "failed"}
        end

        def earliest_due(db)
          db.get_first_value(
            "SELECT min(run_at) FROM jobs " \
            "WHERE state IN ('scheduled', 'retry')"
          )
        end
      end
    end
  end
end

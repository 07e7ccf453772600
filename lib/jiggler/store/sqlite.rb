# frozen_string_literal: true

require "monitor"
require_relative "../job_queue"
require_relative "../payload"
require_relative "../error"
require_relative "connection_error"
require_relative "sqlite/admin"
require_relative "sqlite/batches"
require_relative "sqlite/signals"
require_relative "sqlite/metrics"

module Jiggler
  module Store
    # The embedded store: one SQLite file (WAL) shared by every process on the machine, built on JobQueue's tables.
    # A job is one row whose state says where it is (queued, in_flight, scheduled, retry, dead or done); every move
    # is one short transaction, and each job's history is kept as events (enqueued, started, failed, retried, dead,
    # done), readable with `history(jid)`.
    class SQLite
      # Raised when the database cannot be used.
      class ConnectionError < Store::ConnectionError; end

      include Admin
      include Batches
      include Signals
      include Metrics

      CHUNK = 500
      PUSH_POLL = 0.005
      ANNOUNCED_BY = {"pushes" => :queues, "schedules" => :schedule}.freeze
      private_constant :CHUNK, :PUSH_POLL, :ANNOUNCED_BY

      # @parameter path [String] the database file.
      # @parameter synchronous [String] "normal" or "full".
      # @parameter done_retention [Numeric] seconds finished jobs (and their history) are kept.
      def initialize(path:, synchronous: "normal", done_retention: 3600)
        @path = path
        @synchronous = synchronous
        @done_retention = done_retention
        @lock = Monitor.new # reentrant: requeue reads in flight inside its transaction
      end

      def description = "SQLite #{::File.expand_path(@path)}"

      # Opens the file, creating or migrating it; raises ConnectionError naming the file when it cannot.
      def ping = with { |db| db.get_first_value("SELECT 1") }

      # Appends jobs to a queue.
      def push(queue, payloads)
        now = Time.now.to_f
        write do |queue_db|
          insert(queue_db, "queued", payloads.map { |payload| [queue, now, payload] }, "enqueued")
          count(queue_db.db, "pushes", payloads.size)
        end
      end

      # Adds jobs to the scheduled set, announcing them to idle schedulers when one is due sooner than the others.
      # @parameter entries [Array([Float, String])] run-at time and payload.
      def schedule(entries)
        write do |queue_db|
          earliest = earliest_due(queue_db.db)
          insert(queue_db, "scheduled", entries.map { |at, payload| [queue_of(payload), at, payload] }, "scheduled")
          count(queue_db.db, "schedules", 1) if entries.any? && (earliest.nil? || entries.map(&:first).min < earliest)
        end
      end

      # Acknowledges finished jobs and takes up to `limit` new ones, highest priority queue first; paused queues are
      # skipped.
      # @returns [Array(String)] in-flight field ("id|queue") and payload, alternating.
      def fetch(process, queues, limit:, token:, acks: [], reliable: true)
        write do |queue_db|
          acknowledge(queue_db, process, acks, reliable)
          fetched = []
          queues.each do |queue|
            break if limit <= 0
            rows = take(queue_db, process, queue, limit, reliable)
            rows.each { |id, payload| fetched.push("#{id}|#{queue}", payload) }
            limit -= rows.size
          end
          started = {"type" => "started", "process" => process}
          queue_db.add_events(fetched.each_slice(2).map { |field, _| [field.to_i, started] }) if reliable
          fetched
        end
      end

      # Moves failed jobs out of flight into the retry or the dead set, and counts the failures.
      # @returns [Integer] how many moved (a job no longer in flight is skipped).
      def fail(process, failures, reliable:, dead_cutoff:, dead_max:)
        write do |queue_db|
          moved = failures.count { |field, set, score, payload| fail_one(queue_db, process, field.to_i, set, score, payload, reliable) }
          count(queue_db.db, "failures", moved)
          trim_dead(queue_db, dead_cutoff, dead_max) if failures.any? { |_, set| set == "dead" }
          moved
        end
      end

      # Puts jobs a process holds in flight back at the head of their queues, each exactly once.
      # @parameter jobs [Hash(String, String) | Nil] fields to replacement payloads (nil: as recorded); nil means all.
      def requeue(process, jobs = nil)
        write do |queue_db|
          jobs ||= in_flight(process).transform_values { nil }
          jobs.sum do |field, payload|
            queue_db.db.execute("UPDATE jobs SET state = 'queued', owner = NULL, payload = coalesce(?, payload) " \
              "WHERE id = ? AND state = 'in_flight' AND owner = ?", [payload, field.to_i, process])
            moved = queue_db.db.changes
            queue_db.add_event(field.to_i, {"type" => "requeued", "process" => process}) if moved == 1
            moved
          end.tap { |moved| count(queue_db.db, "pushes", moved) if moved.positive? }
        end
      end

      # The jobs a process holds in flight. @returns [Hash(String, String)] field to payload.
      def in_flight(process)
        rows = with { |db| db.execute("SELECT id, queue, payload FROM jobs WHERE owner = ? AND state = 'in_flight'", [process]) }
        rows.to_h { |id, queue, payload| ["#{id}|#{queue}", payload] }
      end

      def in_flight_count(process)
        with { |db| db.get_first_value("SELECT count(*) FROM jobs WHERE owner = ? AND state = 'in_flight'", [process]) }
      end

      # When the earliest scheduled job or retry is due. @returns [Float | Nil] epoch seconds; nil when there is none.
      def next_due = with { |db| earliest_due(db) }

      # Moves due scheduled jobs and retries to their queues. @returns [Integer] how many moved.
      def enqueue_due(now)
        write do |queue_db|
          due = queue_db.db.execute("SELECT id, state, payload FROM jobs WHERE state IN ('scheduled', 'retry') AND run_at <= ?", [now])
          due.each { |id, state, payload| enqueue_one(queue_db, id, state, payload, now) }
          count(queue_db.db, "pushes", due.size) if due.any?
          prune_done(queue_db, now)
          prune_results(queue_db, now)
          due.size
        end
      end

      # Registers a live process, or refreshes its registration.
      def beat(process, info, ttl)
        write do |queue_db|
          queue_db.db.execute("INSERT INTO processes (id, info, expires_at) VALUES (?, ?, ?) " \
            "ON CONFLICT (id) DO UPDATE SET info = excluded.info, expires_at = excluded.expires_at",
            [process, info, Time.now.to_f + ttl])
        end
      end

      def unregister(process)
        write { |queue_db| queue_db.db.execute("DELETE FROM processes WHERE id = ?", [process]) }
      end

      # The registered processes whose registration expired. @returns [Array(String)]
      def dead_processes
        # Read in a write transaction, so that it waits for another writer's lock as heartbeats do: while a lock holds
        # every heartbeat back, registrations expire without their processes dying, and a reaper that waited too
        # takes the expiries it then sees with the grace it gives any outage (Reaper#registrations_trusted?).
        write { |queue_db| queue_db.db.execute("SELECT id FROM processes WHERE expires_at <= ?", [Time.now.to_f]).flatten }
      end

      # Drops a dead process from the registry once it holds no job in flight.
      def forget(process)
        write do |queue_db|
          queue_db.db.execute("DELETE FROM processes WHERE id = ? AND expires_at <= ? AND NOT EXISTS " \
            "(SELECT 1 FROM jobs WHERE owner = ? AND state = 'in_flight')", [process, Time.now.to_f, process])
          queue_db.db.changes == 1
        end
      end

      # Waits for an announcement by any process: a job pushed, or a job scheduled sooner than the others.
      # @returns [Symbol | Nil] :queues, :schedule, :any (both), or nil when the timeout passed.
      # @asynchronous
      def wait_for_wake(timeout)
        @announced ||= announcements
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
        until (seen = announcements) != @announced
          return if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= deadline
          sleep(PUSH_POLL)
        end
        changed = seen.keys.reject { |name| seen[name] == @announced[name] }
        @announced = seen
        (changed.size == 2) ? :any : ANNOUNCED_BY.fetch(changed.first)
      end

      def close
        @lock.synchronize do
          @queue&.close
          @queue = nil
        end
      end

      # Runs a block with the database connection (opened on first use), one caller at a time.
      def with
        @lock.synchronize { yield job_queue.db }
      rescue SQLite3::Exception => error
        raise ConnectionError, "#{@path}: #{error.message}"
      end

      private

      def job_queue
        @queue ||= JobQueue.new(@path, synchronous: @synchronous)
      rescue JobQueue::OpenError => error
        raise ConnectionError, error.message
      end

      # A write transaction.
      def write
        @lock.synchronize { job_queue.transaction { yield job_queue } }
      rescue SQLite3::Exception => error
        raise ConnectionError, "#{@path}: #{error.message}"
      end

      # Adds jobs in one state, CHUNK per statement, each with its first event (if any).
      # @parameter rows [Array([String, Float, String])] queue, run-at time and payload of each.
      # @parameter batch [String | Nil] the batch class, for batch items.
      # @returns [Array(Integer)] the new ids.
      def insert(queue_db, state, rows, event = nil, batch: nil)
        rows.each_slice(CHUNK).flat_map do |slice|
          ids = queue_db.db.execute("INSERT INTO jobs (state, batch, queue, run_at, payload) VALUES " \
            "#{(["(?, ?, ?, ?, ?)"] * slice.size).join(", ")} RETURNING id", slice.flat_map { |row| [state, batch, *row] }).map(&:first)
          queue_db.add_events(ids.map { |id| [id, {"type" => event}] }) if event
          ids
        end
      end

      def queue_of(payload)
        Payload.load(payload)["queue"] || "default"
      rescue Payload::MalformedError
        "default" # moved to a queue when due, then to the dead set by the worker that cannot read it
      end

      def take(queue_db, process, queue, limit, reliable)
        ids = queue_db.db.execute("SELECT id, payload FROM jobs WHERE state = 'queued' AND queue = ? AND NOT EXISTS " \
          "(SELECT 1 FROM paused_queues WHERE paused_queues.queue = ?) ORDER BY run_at, id LIMIT ?", [queue, queue, limit])
        return ids if ids.empty?
        marks = (["?"] * ids.size).join(", ")
        if reliable
          queue_db.db.execute("UPDATE jobs SET state = 'in_flight', owner = ? WHERE id IN (#{marks})", [process, *ids.map(&:first)])
        else
          queue_db.delete_where("id IN (#{marks})", ids.map(&:first))
        end
        ids
      end

      def acknowledge(queue_db, process, fields, reliable)
        return if fields.empty?
        return count(queue_db.db, "processed", fields.size) unless reliable
        now = Time.now.to_f
        finished = fields.each_slice(CHUNK).sum do |slice|
          ids = slice.map(&:to_i)
          done = queue_db.db.execute("UPDATE jobs SET state = 'done', owner = NULL, run_at = ? " \
            "WHERE id IN (#{(["?"] * ids.size).join(", ")}) AND state = 'in_flight' AND owner = ? RETURNING id", [now, *ids, process])
          queue_db.add_events(done.map { |(id)| [id, {"type" => "done"}] }, at: now)
          done.size
        end
        # An acknowledgement sent again after a lost reply counts once.
        count(queue_db.db, "processed", finished)
      end

      def fail_one(queue_db, process, id, set, score, payload, reliable)
        job = Payload.load(payload)
        if reliable
          queue_db.db.execute("UPDATE jobs SET state = ?, run_at = ?, payload = ?, owner = NULL " \
            "WHERE id = ? AND state = 'in_flight' AND owner = ?", [set, score, payload, id, process])
          return false unless queue_db.db.changes == 1 # requeued elsewhere meanwhile: it must not be in two places
        else
          # At-most-once jobs left the table when they were fetched.
          id = insert(queue_db, set, [[job["queue"], score, payload]]).first
        end
        queue_db.add_event(id, {"type" => "failed", "attempt" => job["attempt"], "error_class" => job["error_class"], "error_message" => job["error_message"]})
        queue_db.add_event(id, {"type" => "dead"}) if set == "dead"
        true
      rescue Payload::MalformedError
        false
      end

      def enqueue_one(queue_db, id, state, payload, now)
        job = Payload.load(payload)
        queue = (state == "retry" && job["retry_queue"]) || job["queue"] || "default"
        job["enqueued_at"] = now
        # A batch item from the scheduled set (not a retry, which runs again as it ran) joins its batch.
        batch = job["name"] if state == "scheduled" && Batch.item?(job)
        queue_db.db.execute("UPDATE jobs SET state = ?, queue = ?, batch = ?, run_at = ?, payload = ? WHERE id = ?",
          [batch ? "batching" : "queued", queue, batch, now, Payload.dump(job), id])
        queue_db.add_event(id, {"type" => (state == "retry") ? "retried" : "enqueued"}, at: now)
      rescue Payload::MalformedError
        queue_db.db.execute("UPDATE jobs SET state = 'queued', queue = 'default', run_at = ? WHERE id = ?", [now, id])
      end

      # Finished jobs, and items gone into batches, are kept `done_retention` seconds for their history, then deleted.
      def prune_done(queue_db, now)
        queue_db.delete_where("state IN ('done', 'batched') AND run_at < ?", [now - @done_retention])
      end

      def trim_dead(queue_db, cutoff, max)
        queue_db.delete_where("state = 'dead' AND (run_at < ? OR id NOT IN " \
          "(SELECT id FROM jobs WHERE state = 'dead' ORDER BY run_at DESC LIMIT ?))", [cutoff, max])
      end

      def count(db, name, amount)
        db.execute("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value", [name, amount])
      end

      # How many pushes and announced schedules there have been; changes wake idle fetchers and schedulers.
      def announcements
        counts = with { |db| db.execute("SELECT name, value FROM counters WHERE name IN ('pushes', 'schedules')").to_h }
        {"pushes" => counts["pushes"].to_i, "schedules" => counts["schedules"].to_i}
      end

      def earliest_due(db) = db.get_first_value("SELECT min(run_at) FROM jobs WHERE state IN ('scheduled', 'retry')")
    end
  end
end

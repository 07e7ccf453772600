# frozen_string_literal: true

require "monitor"
require_relative "../sqlite_file"
require_relative "../error"
require_relative "connection_error"
require_relative "../config/sqlite_path"
require_relative "sqlite/schema"
require_relative "sqlite/database"
require_relative "sqlite/queue_path"
require_relative "sqlite/wake"
require_relative "sqlite/registry"
require_relative "sqlite/batches"
require_relative "sqlite/results"
require_relative "sqlite/admin"
require_relative "sqlite/admin_actions"
require_relative "sqlite/signals"
require_relative "sqlite/cancels"
require_relative "sqlite/cancel_waiting"
require_relative "sqlite/metrics"
require_relative "sqlite/recurrences"
require_relative "sqlite/uniqueness"
require_relative "sqlite/limits"
require_relative "sqlite/rates"
require_relative "sqlite/workflows"
require_relative "sqlite/lookups"

module Jiggler
  module Store
    # The embedded store: one SQLite file (WAL) shared by every process on the machine, with tables of its own
    # (SCHEMA) reached through Database.
    # A job is one row whose state says where it is (queued, in_flight, scheduled, retry, dead or done); every move
    # is one short transaction, and each job's history is kept as events (enqueued, started, failed, retried, dead,
    # done), readable with `history(jid)`.
    #
    # It keeps the contract of contract.md, one role per module: QueuePath (with Wake), Registry, Batches and
    # Results, Admin and AdminActions. This file holds what they share: the connection, its transactions and the
    # writes several roles make. The roles call these and one another's public methods, nothing private of one another.
    class SQLite
      # Raised when the database cannot be used.
      class ConnectionError < Store::ConnectionError; end

      include QueuePath
      include Wake
      include Registry
      include Batches
      include Results
      include Admin
      include AdminActions
      include Signals
      include Cancels
      include CancelWaiting
      include Metrics
      include Recurrences
      include Uniqueness
      include Limits
      include Rates
      include Workflows
      include Lookups

      CHUNK = 500
      PUSH_POLL = 0.005
      ANNOUNCE_POLL = 1.0
      ANNOUNCED_BY = {"pushes" => :queues, "schedules" => :schedule}.freeze
      SETS = %w[scheduled retry dead].freeze
      COUNTERS = %w[processed failures].freeze
      BY_ENTRY = "state = ? AND run_at = ? AND json_valid(payload) " \
        "AND json_extract(payload, '$.jid') = ?"
      private_constant :CHUNK, :PUSH_POLL, :ANNOUNCE_POLL, :ANNOUNCED_BY,
        :BY_ENTRY

      # @parameter path [String] the database file.
      # @parameter synchronous [String] "normal" or "full".
      # @parameter done_retention [Numeric] seconds finished jobs (and their history) are kept.
      def initialize(path:, synchronous: "normal", done_retention: 3600)
        @path = path
        @synchronous = synchronous
        @done_retention = done_retention
        # reentrant: requeue reads in flight inside its transaction
        @lock = Monitor.new
      end

      # Deletes all of the store's data, each role's in turn.
      def clear_all
        clear_workflows
        clear_jobs_and_processes
        clear_metrics
        clear_cancels
        clear_signals
      end

      # A human name for logs.
      def description = "SQLite #{::File.expand_path(@path)}"

      # Opens the file, creating or migrating it; raises ConnectionError naming the file when it cannot.
      def ping = with { |db| db.get_first_value("SELECT 1") }

      # Closes the database connection; the next call opens it again.
      def close
        @lock.synchronize do
          @database&.close
          @database = nil
          @doorbell&.close
        end
      end

      # Runs a block with the database connection (opened on first use), one caller at a time.
      def with
        @lock.synchronize { yield database }
      rescue SQLite3::Exception => error
        raise ConnectionError, "#{@path}: #{error.message}"
      end

      private

      def database
        @database ||= SQLiteFile.open(
          file_path,
          SCHEMA,
          synchronous: @synchronous,
          connection: Database
        )
      rescue SQLiteFile::OpenError => error
        raise ConnectionError, error.message
      end

      # The path, unless it names an in-memory database: checked here too, for a store built without a Config.
      def file_path
        return @path unless Config::SQLitePath.in_memory?(@path.to_s)
        raise ConnectionError,
          "sqlite_path (JIGGLER_SQLITE_PATH) #{@path.inspect} " \
          "is an in-memory database that no other process sees, " \
          "so its jobs would never run: name a file"
      end

      # A write transaction.
      def write
        @lock.synchronize do
          outermost = !database.transaction_active?
          # Taken at once, so that two writers never deadlock; a nested write joins the outer one.
          result = outermost ?
            database.transaction(:immediate) { yield database } :
            yield(database)
          # once committed: a waiter that looks sooner sees nothing new
          ring_if_announced if outermost
          result
        ensure
          # a transaction that rolled back announced nothing
          @announced_work = false if outermost
        end
      rescue SQLite3::Exception => error
        raise ConnectionError, "#{@path}: #{error.message}"
      end

      # Adds jobs in one state, CHUNK per statement, each with its first event (if any).
      # @parameter rows [Array([String, Float, String])] queue, run-at time and payload of each.
      # @parameter batch [String | Nil] the batch class, for batch items.
      # @returns [Array(Integer)] the new ids.
      def insert(db, state, rows, event = nil, batch: nil)
        rows.each_slice(CHUNK).flat_map do |slice|
          ids = db.execute(
            "INSERT INTO jobs (state, batch, queue, run_at, payload) VALUES " \
            "#{(["(?, ?, ?, ?, ?)"] * slice.size).join(", ")} RETURNING id",
            slice.flat_map { |row| [state, batch, *row] }
          ).map(&:first)
          db.add_events(ids.map { |id| [id, {"type" => event}] }) if event
          ids
        end
      end

      def count(db, name, amount)
        @announced_work = true if ANNOUNCED_BY.key?(name)
        db.execute(
          "INSERT INTO counters (name, value) VALUES (?, ?) " \
          "ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
          [name, amount]
        )
      end

      # Moves an entry of a set where the block says: to a queue, or into a batch.
      def enqueue_one(db, id, from, payload, now)
        destination = yield(from, payload)
        db.execute(
          "UPDATE jobs SET state = ?, queue = ?, batch = ?, run_at = ?, " \
          "payload = ? WHERE id = ?",
          [
            destination.batch ? "batching" : "queued",
            destination.queue,
            destination.batch,
            now,
            destination.payload,
            id
          ]
        )
        db.add_event(
          id,
          {"type" => (from == :scheduled) ? "enqueued" : "retried"},
          at: now
        )
      end

      # Finished jobs, and items gone into batches, are kept `done_retention` seconds for their history, then deleted;
      # results and finished workflows are kept until they expire. The scheduler's check runs this.
      def prune(db, now)
        db.delete_where(
          "state IN ('done', 'batched') AND run_at < ?",
          [now - @done_retention]
        )
        db.execute("DELETE FROM results WHERE expires_at <= ?", [now])
        prune_workflows(db, now)
      end

      # Drops dead jobs older than `cutoff` and beyond the newest `max`.
      def trim_dead(db, cutoff, max)
        db.delete_where(
          "state = 'dead' AND (run_at < ? OR id NOT IN " \
          "(SELECT id FROM jobs WHERE state = 'dead' " \
          "ORDER BY run_at DESC LIMIT ?))",
          [cutoff, max]
        )
      end

      def set_state(set)
        unless set.is_a?(Symbol) && SETS.include?(set.to_s)
          raise ArgumentError,
            "unknown set #{set.inspect}; use one of #{SETS.map(&:to_sym)}"
        end
        set.to_s
      end
    end
  end
end

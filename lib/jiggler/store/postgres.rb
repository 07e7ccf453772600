# frozen_string_literal: true

require "digest"
require_relative "../error"
require_relative "connection_error"
require_relative "fetched"

# Opened before its parts, which reopen it (see the autoloads in lib/jiggler.rb).
module Jiggler
  module Store
    class Postgres; end
  end
end

require_relative "postgres/connection"
require_relative "postgres/active_record_connection"
require_relative "postgres/schema"
require_relative "postgres/queue_path"
require_relative "postgres/wake"
require_relative "postgres/registry"
require_relative "postgres/batches"
require_relative "postgres/results"
require_relative "postgres/admin"
require_relative "postgres/admin_actions"
require_relative "postgres/signals"
require_relative "postgres/metrics"
require_relative "postgres/recurrences"
require_relative "postgres/uniqueness"
require_relative "postgres/limits"
require_relative "postgres/rates"
require_relative "postgres/cancels"
require_relative "postgres/cancel_waiting"
require_relative "postgres/workflows"
require_relative "postgres/lookups"

module Jiggler
  module Store
    # The PostgreSQL store: the tables of one schema (named after the namespace) in the
    # application's database. A job is one row whose state says where it is; every move is one short
    # transaction (a fetch, one function call), committed at once: no row lock and no advisory lock
    # is held while a job runs. Claims take queued rows with `FOR UPDATE SKIP LOCKED`, so servers
    # never wait on one another's claims; idle servers are woken by LISTEN/NOTIFY on a connection of
    # their own, and poll as well in case a notification was missed.
    #
    # It keeps the contract of contract.md, one role per module (QueuePath with Wake, Registry,
    # Batches, Results, Admin, AdminActions, Signals, Metrics, Recurrences, Uniqueness, Limits,
    # Rates, Cancels, CancelWaiting). The roles share one explicit Connection (`@db`) and the writes
    # below, and call one another's public methods, nothing private of one another.
    class Postgres
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
      include Metrics
      include Recurrences
      include Uniqueness
      include Limits
      include Rates
      include Cancels
      include CancelWaiting
      include Workflows
      include Lookups

      CHUNK = 5000
      SETS = %w[scheduled retry dead].freeze
      COUNTERS = %w[processed failures].freeze
      INSERT = "INSERT INTO @.jobs (state, batch, queue, run_at, payload) " \
        "SELECT $1, $2, q, t, p " \
        "FROM unnest($3::text[], $4::float8[], $5::bytea[]) " \
        "WITH ORDINALITY AS r(q, t, p, n) " \
        "ORDER BY n RETURNING id"
      MOVE = "UPDATE @.jobs SET state = $1, queue = $2, batch = $3, " \
        "run_at = $4, payload = $5 WHERE id = $6"
      EARLIEST =
        "SELECT min(run_at) FROM @.jobs WHERE state IN ('scheduled', 'retry')"
      private_constant :CHUNK, :INSERT, :MOVE, :EARLIEST

      # A store that writes through an application's connection, inside its transaction when one is
      # open: a job pushed so exists if and only if that transaction commits (docs/stores.md,
      # "Transactional enqueue").
      # @parameter connection [PG::Connection]
      # @parameter namespace [String] the schema, as the servers' `namespace`.
      # @returns [Postgres]
      def self.on(connection, namespace: "jiggler")
        new(url: nil, namespace: namespace, connection: connection)
      end

      # @parameter url [String] a postgres:// or postgresql:// URL.
      # @parameter namespace [String] the schema its tables live in.
      # @parameter pool_size [Integer] connections at most.
      # @parameter done_retention [Numeric] seconds expired results and signals are kept before they
      #   are pruned.
      # @parameter connection [PG::Connection | Nil] see `on`.
      def initialize(
        url:,
        namespace: "jiggler",
        pool_size: 1,
        done_retention: 3600,
        connection: nil
      )
        @db = Connection.new(url: url, schema: namespace, size: pool_size,
          connection: connection)
        @channel = "jiggler_#{Digest::SHA256.hexdigest(namespace)[0, 24]}"
        @done_retention = done_retention
      end

      # Deletes all of the store's data, each role's in turn.
      def clear_all
        clear_workflows
        clear_jobs_and_processes
      end

      # A human name for logs, without the password.
      def description
        where = if @db.url
          Config::Redaction.url(@db.url)
        else
          "(an application's connection)"
        end
        if @db.pooled?
          pooled = " (behind a pooler that refuses startup options: " \
            "statement and lock timeouts are the role's)"
        end
        "PostgreSQL #{where}, schema #{@db.schema.inspect}#{pooled}"
      end

      # Connects, making the tables when needed; raises ConnectionError unless the database answers.
      def ping = with { |connection| connection.exec("SELECT 1") }

      # Closes the connections; the next call opens them again.
      def close
        @db.close
        close_subscription
        close_cancel_subscription
      end

      # Runs a block with a connection of the store's (the schema made), one caller at a time for
      # each.
      # @yields {|connection| ...} a PG::Connection.
      def with(&block)
        Schema.ensure(@db) unless @made
        @made = true
        @db.with(&block)
      end

      private

      # A transaction on one connection, the schema made first.
      def write(&block) = with { @db.transaction(&block) }

      # Adds jobs in one state, CHUNK per statement, in order.
      # @parameter rows [Array([String, Float, String])] queue, run-at time and payload of each.
      # @returns [Array(Integer)] the new ids.
      def insert(state, rows, batch: nil)
        rows.each_slice(CHUNK).flat_map do |slice|
          queues, times, payloads = slice.transpose
          payloads = payloads.map { |payload| @db.bytes(payload) }
          @db.query(INSERT, [state, batch, queues, times, payloads]).flatten
        end
      end

      # Drops dead jobs older than `cutoff` and beyond the newest `max`.
      def trim_dead(cutoff, max)
        @db.query(
          "DELETE FROM @.jobs WHERE state = 'dead' " \
          "AND (run_at < $1 OR id NOT IN " \
          "(SELECT id FROM @.jobs WHERE state = 'dead' " \
          "ORDER BY run_at DESC, id DESC LIMIT $2))",
          [cutoff, max]
        )
      end

      # Takes a key's transaction advisory lock: the steps of one limit key run one at a time.
      def lock_key(kind, key)
        @db.query(
          "SELECT 1 FROM pg_advisory_xact_lock(hashtextextended($1, 0))",
          ["#{@channel}:#{kind}:#{key}"]
        )
      end

      def count(name, amount)
        @db.query(
          "INSERT INTO @.counters AS c (name, value) VALUES ($1, $2) " \
          "ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value",
          [name, amount]
        )
      end

      # Wakes idle servers once the transaction commits (NOTIFY is sent at commit, and not on
      # rollback). Work put back in a queue (requeued, a freed slot's job) may sit behind this
      # process's claim marks: its next fetch rescans (QueuePath#fetch).
      # @parameter kind [String] "queues" or "schedule".
      def announce(kind)
        @rescan_at = nil if kind == "queues"
        @db.query("SELECT 1 FROM pg_notify($1, $2)", [@channel, kind])
      end

      # Moves an entry of a set where the block says: to a queue's tail, or into a batch.
      def enqueue_one(id, from, payload, now)
        destination = yield(from, payload)
        state = destination.batch ? "batching" : "queued"
        @db.query(MOVE, [state, destination.queue, destination.batch, now,
          @db.bytes(destination.payload), id])
      end

      # Expired results, signals nobody took and expired finished workflows are deleted; finished jobs left at their
      # acknowledgement. The scheduler's check runs this.
      def prune(now)
        @db.query("DELETE FROM @.results WHERE expires_at <= $1", [now])
        @db.query(
          "DELETE FROM @.unique_locks WHERE expires_at <= $1",
          [now - @done_retention]
        )
        prune_workflows(now)
      end

      def set_state(set)
        unless set.is_a?(Symbol) && SETS.include?(set.to_s)
          raise ArgumentError,
            "unknown set #{set.inspect}; use one of #{SETS.map(&:to_sym)}"
        end
        set.to_s
      end

      def earliest_due = @db.value(EARLIEST)
    end
  end
end

# frozen_string_literal: true

# Opened before its parts, which reopen it (see the autoloads in lib/jiggler.rb).
module Jiggler
  module Store
    class Redis; end
  end
end

require_relative "redis/connection"
require_relative "redis/script"
require_relative "redis/keys"
require_relative "redis/queue_path"
require_relative "redis/wake"
require_relative "redis/registry"
require_relative "redis/batches"
require_relative "redis/results"
require_relative "redis/admin"
require_relative "redis/admin_actions"
require_relative "redis/signals"
require_relative "redis/cancels"
require_relative "redis/cancel_waiting"
require_relative "redis/metrics"
require_relative "redis/recurrences"
require_relative "redis/uniqueness"
require_relative "redis/limits"
require_relative "redis/workflows"
require_relative "redis/lookups"
require_relative "../error"
require_relative "connection_error"

module Jiggler
  module Store
    # The Redis store: queues are lists, scheduled, retry and dead jobs are sorted sets scored by time, and each
    # process records the jobs it holds in its own in-flight hash. Every move between places is one Lua script.
    # It keeps the contract of ../store/contract.md, one role per module: QueuePath (with Wake), Registry, Batches
    # and Results, Admin and AdminActions. This file holds what they share: the connection and the moves of jobs
    # to their queues. The roles call these and the public methods of one another, nothing private of one another.
    #
    # All keys of a namespace share one hash tag (`{jiggler}:...`), so the scripts also work on Redis Cluster.
    class Redis
      # Raised when the store cannot be reached.
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
      include Workflows
      include Lookups

      CHUNK = 1000
      PUSH_CHUNK = 5000 # under Lua's limit of about 8000 values for unpack
      DUE_CHUNK = 100
      SCRIPTS = %w[push schedule fetch fail move kill batch join checkpoint]
        .to_h { |name| [name.to_sym, Script.new(name)] }
        .freeze
      private_constant :CHUNK, :PUSH_CHUNK, :DUE_CHUNK, :SCRIPTS

      attr_reader :keys

      # @parameter pool [#with | #acquire] a ConnectionPool, an Async::Pool or a single RedisClient.
      # @parameter namespace [String] the prefix of every key.
      # @parameter config [RedisClient::Config | Nil] used to open the subscription that wakes idle servers.
      # @parameter owned [Boolean] whether `close` also closes the pool (false for a pool the application passed).
      def initialize(pool:, namespace: "jiggler", config: nil, owned: false)
        @pool = pool
        @owned = owned
        @checkout = pool.respond_to?(:acquire) ? :acquire : :with
        @keys = Keys.new(namespace)
        @config = config
        @tokens = Hash.new(0)
        # queue name => whether the last push found jobs waiting (see QueuePath#push_one)
        @backlogs = {}
      end

      # Deletes all of the namespace's data, each role's in turn: the signals are found through the registry, so they
      # go before it.
      def clear_all
        clear_workflows
        clear_cancels
        clear_signals
        clear_jobs_and_processes
        clear_metrics
        clear_recurrences
        clear_unique_locks
        clear_limits
      end

      # A human name for logs.
      def description
        "Redis #{@config&.server_url || "(custom pool)"} " \
          "namespace #{@keys.namespace.inspect}"
      end

      # Raises ConnectionError unless the store answers for this namespace's keys (on Redis Cluster, only the node
      # holding their slot does).
      def ping
        with { |redis| redis.call("EXISTS", @keys.queues) }
      end

      # Closes the subscription, and the pool when the store built it.
      def close
        @subscription&.close
        @subscription = nil
        @cancel_subscription&.close
        @cancel_subscription = nil
        return unless @owned
        @pool.respond_to?(:shutdown) ? @pool.shutdown(&:close) : @pool.close
      end

      # Runs a block with a connection from the pool, turning connection failures into ConnectionError.
      # A fiber pool used outside a reactor (a script, a console) gets a short-lived one.
      def with(&block)
        if @checkout == :acquire && defined?(Async::Task) &&
            !Async::Task.current?
          return Sync { with(&block) }
        end
        @pool.public_send(@checkout, &block)
      rescue ::RedisClient::CannotConnectError,
        ::RedisClient::ConnectionError => error
        raise ConnectionError,
          "Redis #{@config&.server_url || ""} is unreachable: #{error.message}"
      rescue ::RedisClient::CommandError => error
        if error.message.start_with?("MOVED ", "ASK ")
          raise ConnectionError,
            "namespace #{@keys.namespace.inspect} lives on Redis Cluster " \
            "node #{error.message.split[2]}, " \
            "not on #{@config&.server_url || "this node"}: " \
            "point redis_url at that node"
        end
        # a wrong or missing password, as unusable as no Redis
        raise unless %w[WRONGPASS NOAUTH].include?(error.code)
        raise ConnectionError,
          "Redis #{@config&.server_url || ""} refused the connection " \
          "(check the password in its URL): #{error.message}"
      end

      private

      # Asks where a due entry goes. @returns [Array] member, queue, payload to push, and for a batch item its
      # batch's name, else nil.
      def due_move(member, from)
        destination = yield(from, member)
        if destination.batch
          batch = @keys.batch_name(destination.queue, destination.batch)
        end
        [member, destination.queue, destination.payload, batch]
      end

      # Moves entries of a sorted set as due_move described them: jobs to their queues (move.lua), batch items to
      # their batches (join.lua). @returns [Integer] how many moved.
      def move_due(redis, set, moves, now)
        items, jobs = moves.partition(&:last)
        moved = if jobs.empty?
          0
        else
          move(redis, set, "set", jobs.map { |job| job.first(3) })
        end
        return moved if items.empty?
        keys = [
          set,
          @keys.batches,
          *items.map { |*, batch| @keys.batch(batch) }
        ]
        moved + SCRIPTS[:join].call(
          redis,
          keys,
          [
            now,
            *items.flat_map do |member, _, payload, batch|
              [member, batch, payload]
            end
          ]
        )
      end

      # Runs move.lua for [item, queue, payload] triples.
      def move(redis, source, kind, moves)
        keys = [
          source,
          @keys.queues,
          *moves.map { |_, queue, _| @keys.queue(queue) }
        ]
        SCRIPTS[:move].call(redis, keys, [@keys.wake, kind, *moves.flatten(1)])
      end

      def registered_processes
        with { |redis| redis.call("ZRANGE", @keys.processes, 0, -1) }
      end
    end
  end
end

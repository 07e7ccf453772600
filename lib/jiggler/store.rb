# frozen_string_literal: true

require_relative "store/fetched"
require_relative "store/failed"

module Jiggler
  # Stores hold queues, scheduled, retry and dead jobs, in-flight records, processes and counters. Only store classes
  # know the database; everything else talks to the store interface. PostgreSQL is used when a PostgreSQL URL is
  # configured (`database_url` or JIGGLER_DATABASE_URL), Redis when a Redis URL is (`redis_url` or REDIS_URL);
  # otherwise the embedded SQLite file at `sqlite_path` (Config#store_kind, read in `build` alone).
  module Store
    # Loaded when a Redis or PostgreSQL store is first built, so an application on SQLite never loads redis-client
    # or pg.
    autoload :Redis, File.expand_path("store/redis", __dir__)
    autoload :Postgres, File.expand_path("store/postgres", __dir__)

    module_function

    # The store the client enqueues through: for Redis and PostgreSQL, a thread-safe pool by default (Redis: a fiber
    # pool with `client_async`, or the pool given as `client_redis_pool`).
    # @parameter config [Config]
    def client(config)
      build(config, :client, size: config[:client_concurrency])
    end

    # The store a server's fibers share.
    # @parameter size [Integer] connections at most.
    def server(config, size:) = build(config, :server, size: size)

    # A store on one connection of its own, for one loop or thread.
    def dedicated(config) = build(config, :dedicated, size: 1)

    # The one place a store is chosen, by Config#store_kind.
    # @parameter use [Symbol] :client, :server or :dedicated.
    def build(config, use, size:)
      case config.store_kind
      when :postgres then postgres(config, size, use)
      when :redis then redis(config, use, size)
      else sqlite(config)
      end
    end

    def postgres(config, size, use)
      if use == :client && config[:transactional_enqueue]
        return active_record(config)
      end
      Postgres.new(
        url: config[:database_url],
        namespace: config[:namespace],
        pool_size: size,
        done_retention: config[:done_retention]
      )
    end

    # The client's store with `transactional_enqueue`: the PostgreSQL store on the application's Active Record
    # connection, so jobs are written in its transaction.
    def active_record(config)
      unless defined?(::ActiveRecord::Base)
        raise Config::InvalidError,
          "transactional_enqueue writes jobs on Active Record's " \
          "connection: load the Rails app (or Active Record) before " \
          "jiggler's client is used"
      end
      Postgres.new(
        url: nil,
        namespace: config[:namespace],
        connection: Postgres::ActiveRecordConnection,
        done_retention: config[:done_retention]
      )
    end

    def redis(config, use, size)
      redis = Redis::Connection.config(config[:redis_url])
      pool = case use
      when :client then config[:client_redis_pool] || client_pool(config, redis)
      when :server then Redis::Connection.fiber_pool(redis, size)
      else redis.new_client
      end
      owned = !(use == :client && config[:client_redis_pool])
      Redis.new(
        pool: pool, namespace: config[:namespace], config: redis, owned: owned
      )
    end

    def sqlite(config)
      require_relative "store/sqlite"
      SQLite.new(
        path: config[:sqlite_path],
        synchronous: config[:sqlite_synchronous],
        done_retention: config[:done_retention]
      )
    end

    def client_pool(config, redis)
      size = config[:client_concurrency]
      config[:client_async] ?
        Redis::Connection.fiber_pool(redis, size) :
        Redis::Connection.thread_pool(redis, size)
    end
  end
end

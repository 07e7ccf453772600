# frozen_string_literal: true

require_relative "store/fetched"
require_relative "store/failed"

module Jiggler
  # Stores hold queues, scheduled, retry and dead jobs, in-flight records, processes and counters. Only store classes
  # know the database; everything else talks to the store interface. Redis is used when a Redis URL is configured
  # (`redis_url` or REDIS_URL); otherwise the embedded SQLite file at `sqlite_path`.
  module Store
    # Loaded when a Redis store is first built, so an application on SQLite never loads redis-client.
    autoload :Redis, File.expand_path("store/redis", __dir__)

    module_function

    # The store the client enqueues through: for Redis, a thread-safe pool by default, a fiber pool with
    # `client_async`, or the pool given as `client_redis_pool`.
    # @parameter config [Config]
    def client(config)
      return sqlite(config) unless config.redis?
      redis = Redis::Connection.config(config[:redis_url])
      pool = config[:client_redis_pool] || client_pool(config, redis)
      Redis.new(pool: pool, namespace: config[:namespace], config: redis, owned: !config[:client_redis_pool])
    end

    # The store a server's fibers share.
    # @parameter size [Integer] connections at most.
    def server(config, size:)
      return sqlite(config) unless config.redis?
      redis = Redis::Connection.config(config[:redis_url])
      Redis.new(pool: Redis::Connection.fiber_pool(redis, size), namespace: config[:namespace], config: redis, owned: true)
    end

    # A store on one connection of its own, for one loop or thread.
    def dedicated(config)
      return sqlite(config) unless config.redis?
      redis = Redis::Connection.config(config[:redis_url])
      Redis.new(pool: redis.new_client, namespace: config[:namespace], config: redis, owned: true)
    end

    def sqlite(config)
      require_relative "store/sqlite"
      SQLite.new(path: config[:sqlite_path], synchronous: config[:sqlite_synchronous], done_retention: config[:done_retention])
    end

    def client_pool(config, redis)
      size = config[:client_concurrency]
      config[:client_async] ? Redis::Connection.fiber_pool(redis, size) : Redis::Connection.thread_pool(redis, size)
    end
  end
end

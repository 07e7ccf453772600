# frozen_string_literal: true

require "redis-client"
require_relative "sentinel_url"
require_relative "../../config/redaction"

module Jiggler
  module Store
    class Redis
      # Builds Redis connections and pools with timeouts on every call.
      module Connection
        TIMEOUTS = {
          connect_timeout: 2.0,
          read_timeout: 5.0,
          write_timeout: 5.0
        }.freeze

        # A connection that Async::Pool can manage; it reconnects by itself after an error.
        class Pooled < ::RedisClient
          def concurrency = 1

          def viable? = !@retired

          def reusable? = !@retired

          def closed? = !!@retired

          def close
            @retired = true
            super
          end
        end

        module_function

        # @parameter url [String] a redis://, rediss://, unix:// or redis+sentinel:// (see SentinelURL) URL.
        # @returns [RedisClient::Config]
        # @raises [Config::InvalidError] for a URL redis-client cannot read, showing it redacted.
        def config(url)
          if SentinelURL.match?(url)
            return SentinelURL.new(url).config(
              reconnect_attempts: 0,
              **TIMEOUTS
            )
          end
          ::RedisClient.config(url: url, reconnect_attempts: 0, **TIMEOUTS)
        rescue ArgumentError, URI::InvalidURIError
          # their messages quote the URL, password included
          raise Jiggler::Config::InvalidError,
            "redis_url: redis-client cannot read " \
            "#{Jiggler::Config::Redaction.url(url)} as a Redis URL"
        end

        # A pool for threads (and plain Ruby): ConnectionPool of `size` connections.
        def thread_pool(config, size)
          require "connection_pool"
          ConnectionPool.new(
            size: size,
            timeout: TIMEOUTS[:connect_timeout] * 2
          ) { config.new_client }
        end

        # A pool for fibers: waiting for a connection lets other fibers run.
        def fiber_pool(config, size)
          require "async"
          require "async/pool"
          Async::Pool::Controller.wrap(limit: size) { Pooled.new(config) }
        end
      end
    end
  end
end

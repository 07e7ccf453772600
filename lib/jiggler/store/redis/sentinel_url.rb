# frozen_string_literal: true

require "uri"
require "redis-client"
require_relative "../../config"
require_relative "../../config/redaction"

module Jiggler
  module Store
    class Redis
      # A Redis behind Sentinel, named by one URL so that it fits wherever a Redis URL goes (`redis_url`, REDIS_URL):
      #
      #   redis+sentinel://[[user]:password@]host:port[,host:port...]/master_name[/db][?sentinel_password=secret]
      #
      # The hosts are sentinels (port 26379 when left out); the user and password are the master's. Connections ask
      # the sentinels where the master is, and ask again after an error, so they follow a failover without a restart.
      class SentinelURL
        PATTERN = %r{
          \A redis\+sentinel://
          (?:(?<user>[^:@/]*)(?::(?<password>[^@/]*))?@)?  # [[user]:password@]
          (?<hosts>[^@/?]+)                                # host:port[,host:port...]
          /(?<name>[^/?]+)                                 # /master_name
          (?:/(?<db>\d+))?/?                               # [/db]
          (?:\?(?<query>.*))?                              # [?sentinel_password=secret]
          \z
        }x
        DEFAULT_PORT = 26379
        FORM = "redis+sentinel://[:password@]host:port[,host:port...]" \
          "/master_name[/db]"

        # Whether a URL names sentinels rather than one Redis.
        def self.match?(url) = url.start_with?("redis+sentinel://")

        # @parameter url [String]
        # @raises [Config::InvalidError] when the URL does not have the form above.
        def initialize(url)
          @match = PATTERN.match(url)
          unless @match
            raise Jiggler::Config::InvalidError,
              "redis_url: a Sentinel URL has the form #{FORM} " \
              "(got #{redacted(url)})"
          end
          @sentinels =
            @match[:hosts].split(",").map { |host| sentinel(host, url) }
          @query = URI.decode_www_form(@match[:query].to_s).to_h
        end

        # The client configuration: a RedisClient::SentinelConfig that resolves the master through the sentinels.
        # @parameter options [Hash] RedisClient options (timeouts, reconnect_attempts).
        # @returns [RedisClient::SentinelConfig]
        def config(**options)
          SentinelConfig.new(
            described_as: to_s,
            sentinels: @sentinels,
            name: unescape(@match[:name]),
            db: @match[:db].to_i,
            username: unescape(@match[:user]),
            password: unescape(@match[:password]),
            sentinel_password: @query["sentinel_password"],
            **options
          )
        end

        # The URL without passwords, for logs and messages.
        def to_s
          "redis+sentinel://" \
            "#{@sentinels.map { |sentinel| address(sentinel) }.join(",")}" \
            "/#{@match[:name]}"
        end

        # Names the sentinels and the master, not the master's current address: finding that takes a round trip.
        class SentinelConfig < ::RedisClient::SentinelConfig
          def initialize(described_as:, **options)
            @described_as = described_as
            super(**options)
          end

          def server_url = @described_as
        end
        private_constant :SentinelConfig

        private

        def sentinel(text, url)
          host, port = if text.start_with?("[")
            text.delete_prefix("[").split("]:", 2)
          else
            text.split(":", 2)
          end
          port = port.nil? ? DEFAULT_PORT : Integer(port, exception: false)
          unless port && !host.to_s.empty?
            raise Jiggler::Config::InvalidError,
              "redis_url: #{text.inspect} is not host:port " \
              "in #{redacted(url)}"
          end
          {host: host.delete_suffix("]"), port: port}
        end

        def address(sentinel)
          host = if sentinel[:host].include?(":")
            "[#{sentinel[:host]}]"
          else
            sentinel[:host]
          end
          "#{host}:#{sentinel[:port]}"
        end

        def unescape(text)
          (text.nil? || text.empty?) ? nil : URI::DEFAULT_PARSER.unescape(text)
        end

        def redacted(url) = Jiggler::Config::Redaction.url(url)
      end
    end
  end
end

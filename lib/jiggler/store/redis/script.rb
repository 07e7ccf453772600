# frozen_string_literal: true

require "digest/sha1"

module Jiggler
  module Store
    class Redis
      # A Lua script from scripts/, run by its SHA and loaded into Redis on first use (or after a restart).
      class Script
        DIRECTORY = ::File.expand_path("scripts", __dir__)

        # @parameter name [String] the file name without ".lua".
        def initialize(name)
          @source = ::File.read(::File.join(DIRECTORY, "#{name}.lua")).freeze
          @sha = Digest::SHA1.hexdigest(@source).freeze
        end

        # Runs the script on a connection.
        # @parameter connection [RedisClient]
        # @parameter keys [Array(String)]
        # @parameter argv [Array]
        # @returns [Object] what the script returns.
        def call(connection, keys, argv)
          connection.call_v(["EVALSHA", @sha, keys.size, *keys, *argv])
        rescue ::RedisClient::CommandError => error
          raise unless error.message.start_with?("NOSCRIPT")
          connection.call_v(["EVAL", @source, keys.size, *keys, *argv])
        end

        # Runs the script once per argument list in one round trip, so that Redis works through the first while the
        # rest are still being sent. A run that found the script missing (Redis restarted) runs again from source.
        # @parameter argvs [Array(Array)]
        # @returns [Array] what each run returned.
        def call_each(connection, keys, argvs)
          replies = connection.pipelined(exception: false) do |pipeline|
            argvs.each { |argv| pipeline.call_v(["EVALSHA", @sha, keys.size, *keys, *argv]) }
          end
          replies.zip(argvs).map do |reply, argv|
            next reply unless reply.is_a?(::RedisClient::CommandError)
            raise reply unless reply.message.start_with?("NOSCRIPT")
            connection.call_v(["EVAL", @source, keys.size, *keys, *argv])
          end
        end
      end
    end
  end
end

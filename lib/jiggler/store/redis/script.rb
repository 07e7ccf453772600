# frozen_string_literal: true

require "digest/sha1"

module Jiggler
  module Store
    class Redis
      # A Lua script from scripts/, run by its SHA and loaded into Redis on first use (or after a restart).
      class Script
        DIRECTORY = ::File.expand_path("scripts", __dir__)

        # @parameter name [String] the file name without ".lua".
        # @parameter parts [Array(String)] files of scripts/parts/ (Lua functions that several scripts share), put
        #   before the script's own source.
        def initialize(name, parts: [])
          files = parts.map do |part|
            ::File.join(DIRECTORY, "parts", "#{part}.lua")
          end << ::File.join(DIRECTORY, "#{name}.lua")
          @source = files.map { |file| ::File.read(file) }.join("\n").freeze
          @sha = Digest::SHA1.hexdigest(@source).freeze
        end

        # Runs the script on a connection.
        # @parameter connection [RedisClient]
        # @parameter keys [Array(String)]
        # @parameter argv [Array]
        # @returns [Object] what the script returns.
        def call(connection, keys, argv)
          connection.call_v(evalsha(keys, argv))
        rescue ::RedisClient::CommandError => error
          from_source(connection, keys, argv, error)
        end

        # Runs the script once per argument list: the first alone (which loads the script if Redis lacks it, so the
        # rest are not sent in vain), the rest in one round trip, so that Redis works through one while the next is
        # still being sent. A run that still found the script missing (flushed meanwhile) runs again from source.
        # @parameter argvs [Array(Array)]
        # @returns [Array] what each run returned.
        def call_each(connection, keys, argvs)
          return [] if argvs.empty?
          first, *rest = argvs
          first_reply = call(connection, keys, first)
          replies = connection.pipelined(exception: false) do |pipeline|
            rest.each { |argv| pipeline.call_v(evalsha(keys, argv)) }
          end
          [first_reply] + replies.zip(rest).map do |reply, argv|
            if reply.is_a?(::RedisClient::CommandError)
              from_source(connection, keys, argv, reply)
            else
              reply
            end
          end
        end

        # The command that runs the script by its SHA, to send in a pipeline of one's own.
        # @returns [Array]
        def command(keys, argv) = evalsha(keys, argv)

        # Runs the script from its source when a pipelined `command` found Redis without it; other errors raise.
        # @parameter error [RedisClient::CommandError] what the pipelined run returned.
        def rerun(connection, keys, argv, error)
          from_source(connection, keys, argv, error)
        end

        private

        def evalsha(keys, argv) = ["EVALSHA", @sha, keys.size, *keys, *argv]

        # Runs the script from its source when Redis no longer had it (restarted, or SCRIPT FLUSH); other errors raise.
        def from_source(connection, keys, argv, error)
          raise error unless error.message.start_with?("NOSCRIPT")
          connection.call_v(["EVAL", @source, keys.size, *keys, *argv])
        end
      end
    end
  end
end

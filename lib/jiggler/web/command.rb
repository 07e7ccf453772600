# frozen_string_literal: true

require "optparse"
require_relative "../web"

module Jiggler
  class Web
    # `jiggler web`: serves the dashboard alone, with the Rack server the bundle has (Puma, Falcon or WEBrick, through
    # the rackup gem), on the store that the environment configures (REDIS_URL, else the SQLite file).
    class Command
      DEFAULTS = {host: "127.0.0.1", port: 9292}.freeze

      # @parameter argv [Array(String)] the arguments after `web`.
      # @returns [Integer] the exit status.
      def run(argv)
        options = parse(argv) or return 0
        load_app(options[:require]) if options[:require]
        serve(options)
        0
      rescue OptionParser::ParseError, LoadError, Config::InvalidError,
        Store::ConnectionError => error
        warn("jiggler web: #{Config::Rules.redact(error.message)}")
        1
      end

      private

      def parse(argv)
        options = DEFAULTS.dup
        OptionParser.new do |opts|
          opts.banner = "Usage: jiggler web [options]\n" \
            "Serves the dashboard; " \
            "put authentication in front of it before exposing it."
          opts.on(
            "-p",
            "--port PORT",
            Integer,
            "port to listen on (default #{DEFAULTS[:port]})"
          ) do |v|
            options[:port] = v
          end
          opts.on(
            "-o",
            "--host HOST",
            "address to bind (default #{DEFAULTS[:host]})"
          ) do |v|
            options[:host] = v
          end
          opts.on(
            "-r",
            "--require PATH",
            "file that configures jiggler (Jiggler.configure ...)"
          ) do |v|
            options[:require] = v
          end
          opts.on("-h", "--help", "print this help") do
            puts opts
            return nil
          end
        end.parse!(argv.dup)
        options
      end

      def load_app(path) = require(::File.expand_path(path))

      def serve(options)
        require "rackup"
      rescue LoadError
        raise LoadError,
          "needs the rackup gem and a Rack server: " \
          "add `gem \"rackup\"` and `gem \"puma\"` (or \"webrick\") " \
          "to your Gemfile"
      else
        Jiggler.store.ping
        warn(
          "jiggler web: #{Jiggler.store.class.name.split("::").last} store, " \
          "on http://#{options[:host]}:#{options[:port]}/"
        )
        ::Rackup::Server.start(
          app: Web.new,
          Host: options[:host],
          Port: options[:port],
          environment: "deployment"
        )
      end
    end
  end
end

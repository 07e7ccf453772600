# frozen_string_literal: true

require "erb"
require "rack/utils"

module Jiggler
  class Web
    # Maps a request's method and path to a block. Patterns are literal paths whose `:name` segments match one path
    # segment each, handed to the block's action as `route_params` (percent-decoded). Routes are tried in the order
    # they were added; HEAD is answered by the GET route.
    class Router
      # A route: its method, the pattern compiled to a Regexp, and the block to run.
      Route = Struct.new(:verb, :pattern, :block)
      # A segment of only dots, which clients resolve away ("/queues/../pause" is "/pause", "%2E%2E" too), is sent
      # with this after it; no queue name holds it, so the router takes it off again.
      DOTS = /\A\.{1,2}\|\z/
      private_constant :DOTS

      # A value as one path segment: everything but unreserved characters percent-encoded ("a?b" -> "a%3Fb",
      # "/" -> "%2F"), and "." and ".." marked so that they stay segments.
      # @parameter value [String]
      # @returns [String]
      def self.segment(value)
        value = "#{value}|" if value.match?(/\A\.{1,2}\z/)
        ERB::Util.url_encode(value)
      end

      def initialize
        @routes = []
      end

      # Adds a GET route.
      # @parameter path [String] e.g. "/queues/:name".
      # @yields {...} run on an Action; returns the response.
      def get(path, &block) = add("GET", path, block)

      # Adds a POST route.
      def post(path, &block) = add("POST", path, block)

      # Finds the route for a request.
      # @parameter verb [String] the request method.
      # @parameter path [String] the path below the app's mount point.
      # @returns [Array(Route, Hash(String, String)) | Nil] the route and its decoded segments, or nil.
      def match(verb, path)
        verb = "GET" if verb == "HEAD"
        @routes.each do |route|
          next unless route.verb == verb
          found = route.pattern.match(path)
          return [route, decode(found)] if found
        end
        nil
      end

      # Whether a route for another method has this path (so the answer is 405, not 404).
      # @returns [Array(String)] the methods that do.
      def allowed(path)
        @routes.select { |route| route.pattern.match?(path) }.map(&:verb).uniq
      end

      private

      def add(verb, path, block)
        source = path.split("/", -1).map do |part|
          part.start_with?(":") ?
            "(?<#{part[1..]}>[^/]+)" :
            Regexp.escape(part)
        end
        @routes << Route.new(verb, /\A#{source.join("/")}\z/, block)
      end

      def decode(found)
        found.named_captures.transform_values do |value|
          value = ::Rack::Utils.unescape_path(value)
            .force_encoding(Encoding::UTF_8)
            .scrub
          value.match?(DOTS) ? value.chomp("|") : value
        end
      end
    end
  end
end

# frozen_string_literal: true

require "uri"
require_relative "redaction"

module Jiggler
  class Config
    # What `redis_url` (and REDIS_URL) accepts: a redis://, rediss://, unix:// or redis+sentinel:// URL without spaces,
    # whose database, when it names one, is a non-negative integer. Refusals show the value only through Redaction.
    module RedisURL
      FORM = %r{\A(redis|rediss|unix|redis\+sentinel)://[[:graph:]]+\z}
      SCHEMES = "a redis://, rediss://, unix:// or redis+sentinel:// URL"
      # A database number as redis-client reads it: Integer() would take "08" for an error and "010" for 8.
      DB = /\A(0|[1-9]\d*)\z/
      private_constant :FORM, :DB

      module_function

      # Checks a URL.
      # @parameter value [Object]
      # @returns [String | Nil] the value.
      # @raises [InvalidError] naming `config[:redis_url]`, with the value redacted.
      def check(value)
        return value if value.nil?
        uri = parse(value) or refuse("must be #{SCHEMES}", value)
        unless db?(uri)
          refuse(
            "must name its database by a non-negative integer, " \
            "as in redis://host:6379/0",
            value
          )
        end
        value
      end

      # @returns [URI::Generic | true | Nil] true for a Sentinel URL, whose host list URI does not parse (SentinelURL
      #   checks it); nil when the value is not a URL of the form.
      def parse(value)
        return nil unless value.is_a?(String) && FORM.match?(value)
        value.start_with?("redis+sentinel://") || URI.parse(value)
      rescue URI::InvalidURIError
        nil
      end

      # The database is the path of a redis:// or rediss:// URL ("/0"), or a `db` query parameter.
      def db?(uri)
        return true if uri == true
        path = uri.path.to_s.delete_prefix("/")
        query = URI.decode_www_form(uri.query.to_s).to_h
        (uri.scheme == "unix" || path.empty? || DB.match?(path)) &&
          (!query.key?("db") || DB.match?(query["db"]))
      rescue ArgumentError
        false # a query URI cannot decode
      end

      def refuse(rule, value)
        raise InvalidError,
          "config[:redis_url] #{rule} (got #{Redaction.url(value)})"
      end
      private_class_method :parse, :db?, :refuse
    end
  end
end

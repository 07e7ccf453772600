# frozen_string_literal: true

require "uri"
require_relative "../error"
require_relative "redaction"

module Jiggler
  class Config
    # What `database_url` (and JIGGLER_DATABASE_URL) accepts: a postgres:// or postgresql:// URL
    # without spaces, as libpq reads it. Refusals show the value only through Redaction.
    module DatabaseURL
      SCHEMES = "a postgres:// or postgresql:// URL"
      FORM = %r{\Apostgres(?:ql)?://[[:graph:]]*\z}
      private_constant :FORM

      module_function

      # Checks a URL.
      # @parameter value [Object]
      # @returns [String | Nil] the value.
      # @raises [InvalidError] naming `config[:database_url]`, with the value redacted.
      def check(value)
        return value if value.nil? || url?(value)
        raise InvalidError,
          "config[:database_url] must be #{SCHEMES} " \
          "(got #{Redaction.url(value)})"
      end

      def url?(value)
        value.is_a?(String) && FORM.match?(value) && !URI.parse(value).nil?
      rescue URI::InvalidURIError
        false
      end
      private_class_method :url?
    end
  end
end

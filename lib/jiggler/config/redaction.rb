# frozen_string_literal: true

require "uri"

module Jiggler
  class Config
    # What a message may show of a URL that can hold a password (REDIS_URL, `redis_url`): the one place every error,
    # log line and description that echoes such a URL goes through.
    #
    # A well-formed URL (`scheme://` then printable characters only, which URI parses) is shown with its credentials
    # and its query values replaced by `***`. Anything else is shown only as its scheme and its host, where those can
    # be found, else as a fixed placeholder: in a malformed value, no rule can tell where a password ends.
    module Redaction
      HIDDEN = "***"
      # The placeholder for a value of which nothing can be shown.
      MALFORMED = "a malformed URL (not shown: it may hold a password)"
      WELL_FORMED = %r{\A[a-z][a-z0-9+.-]*://[[:graph:]]*\z}i
      # A scheme, even mistyped: `redis://`, `redis:/` or `redis//` at the start.
      SCHEME = %r{\A\s*([a-z][a-z0-9+.-]*)(?::/|//)}i
      # A host and port list right after the last `@`, up to a path, query or space.
      ADDRESS = %r{(?:\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d+)?}i
      HOST = %r{\A(#{ADDRESS}(?:,#{ADDRESS})*)(?=[/?#\s]|\z)}i
      # The credentials of a URL in a longer text: from a scheme (mistyped ones included) to the last `@` of the word.
      CREDENTIALS = %r{(\b[a-z][a-z0-9+.-]*(?:://|:/|//))\S*@}i
      private_constant :WELL_FORMED, :SCHEME, :ADDRESS, :HOST, :CREDENTIALS

      module_function

      # What a message may show of a URL value.
      # @parameter value [Object] the value as given, whatever it is.
      # @returns [String] the URL quoted, without credentials or query values; or a description of a malformed value
      #   naming at most its scheme and host.
      def url(value)
        text = value.to_s
        return well_formed(text).inspect if well_formed?(text)
        found = {"scheme" => text[SCHEME, 1], "host" => host(text)}.compact
        return MALFORMED if found.empty?
        "a malformed URL (" \
          "#{found.map { |name, part| "#{name} #{part.inspect}" }.join(", ")}" \
          "; the rest not shown)"
      end

      # A text with the credentials of every URL in it replaced by `***`: the last guard on an error message, which
      # may quote a URL that was not checked (an application's own error, a library's).
      # @parameter text [String]
      # @returns [String]
      def text(text) = text.to_s.gsub(CREDENTIALS, "\\1#{HIDDEN}@")

      # Whether a value has the form of a URL that can be shown redacted.
      def well_formed?(text)
        return false unless WELL_FORMED.match?(text)
        # URI does not parse a list of sentinels
        text.start_with?("redis+sentinel://") || !URI.parse(text).nil?
      rescue URI::InvalidURIError
        false
      end

      def well_formed(text)
        scheme, rest = text.split("://", 2)
        rest = "#{HIDDEN}@#{rest.rpartition("@").last}" if rest.include?("@")
        "#{scheme}://#{rest.gsub(/([?&][^=&]*=)[^&]*/, "\\1#{HIDDEN}")}"
      end

      # The host after the last `@`: whatever comes before it may be a password. Without an `@`, nothing is sure to
      # be a host.
      def host(text)
        before, at, after = text.rpartition("@")
        after[HOST, 1] unless at.empty? || before.empty?
      end
      private_class_method :well_formed?, :well_formed, :host
    end
  end
end

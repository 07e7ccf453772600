# frozen_string_literal: true

require "securerandom"
require "rack/request"
require "rack/utils"

module Jiggler
  class Web
    # Cross-site request forgery protection without a session: a random secret lives in an HttpOnly, SameSite=Strict
    # cookie, and every form carries it masked with a fresh one-time pad (so the page never shows the same bytes
    # twice). A POST is accepted only when the form's token unmasks to the cookie's secret. Another site can neither
    # read the cookie nor the page, so it cannot build a form that passes. Over HTTPS the cookie is named with the
    # `__Host-` prefix, which browsers accept only from the host itself, secure, for path "/": a subdomain or a plain
    # HTTP response cannot plant a secret of its own.
    class CSRF
      COOKIE = "jiggler_csrf"
      SECURE_COOKIE = "__Host-#{COOKIE}"
      FIELD = "authenticity_token"
      SIZE = 32

      # @parameter request [Rack::Request]
      def initialize(request)
        @request = request
        @name = request.ssl? ? SECURE_COOKIE : COOKIE
        @secret = decode(request.cookies[@name])
        @secret = nil unless @secret&.bytesize == SIZE
      end

      # A masked token for a form or a header; makes a new secret when the request brought none.
      # @returns [String] URL-safe Base64.
      def token
        pad = SecureRandom.random_bytes(SIZE)
        [pad + xor(pad, secret)].pack("m0").tr("+/", "-_")
      end

      # Whether the request's form field carries the cookie's secret.
      def valid?
        submitted = decode(@request.POST[FIELD])
        return false unless @secret && submitted&.bytesize == SIZE * 2
        ::Rack::Utils.secure_compare(
          xor(submitted.byteslice(0, SIZE), submitted.byteslice(SIZE, SIZE)),
          @secret
        )
      rescue EOFError, ::Rack::Utils::ParameterTypeError,
        ::Rack::Utils::InvalidParameterError
        false
      end

      # The set-cookie header value to send when a new secret was made, else nil.
      # @parameter path [String] the app's mount point (over HTTPS "/", as the prefix requires).
      def cookie(path)
        return unless @new_secret
        path, secure = "/", "; secure" if @request.ssl?
        "#{@name}=#{[@new_secret].pack("m0").tr("+/", "-_")}; " \
          "path=#{path}; httponly; samesite=strict#{secure}"
      end

      private

      def secret
        @secret ||= (@new_secret = SecureRandom.random_bytes(SIZE))
      end

      def xor(one, other)
        one.bytes.zip(other.bytes).map { |a, b| a ^ b }.pack("C*")
      end

      def decode(text)
        unless text.is_a?(String) && text.match?(/\A[A-Za-z0-9_-]+={0,2}\z/)
          return nil
        end
        text.tr("-_", "+/").unpack1("m0")
      rescue ArgumentError
        nil
      end
    end
  end
end

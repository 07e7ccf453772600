# frozen_string_literal: true

require "rack"

module Jiggler
  class Web
    # The headers every response of the dashboard gets: a Content-Security-Policy that lets pages run only the
    # script that carries this response's nonce, no MIME sniffing, no framing, no caching of pages, and the CSRF
    # cookie when the request came without one.
    module Headers
      SECURITY = {
        "x-content-type-options" => "nosniff",
        "x-frame-options" => "DENY",
        "referrer-policy" => "same-origin"
      }.freeze

      # Adds the headers to a response; a HEAD request gets the headers only.
      # @parameter response [Array] status, headers, body.
      # @parameter action [Action]
      # @returns [Array] the response.
      def self.finish(response, action)
        status, headers, body = response
        headers = SECURITY.merge(headers)
        headers["content-security-policy"] = policy(action.nonce)
        headers["cache-control"] ||= "private, no-store"
        cookie = action.csrf.cookie(action.mount_path)
        headers["set-cookie"] = cookie if cookie
        [status, headers, (action.request.head? ? [] : body)]
      end

      # @returns [String] the Content-Security-Policy for a nonce.
      def self.policy(nonce)
        "default-src 'none'; script-src 'self' 'nonce-#{nonce}'; " \
          "style-src 'self'; img-src 'self' data:; " \
          "connect-src 'self'; form-action 'self'; " \
          "frame-ancestors 'none'; base-uri 'none'"
      end
    end
  end
end

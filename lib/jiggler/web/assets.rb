# frozen_string_literal: true

require "digest/sha2"

module Jiggler
  class Web
    # The dashboard's CSS and JavaScript, read from assets/ once and served from memory. URLs carry a digest of the
    # content, so browsers may keep a file for a day and still never use a stale one.
    module Assets
      DIRECTORY = ::File.expand_path("assets", __dir__)
      TYPES = {
        ".css" => "text/css; charset=utf-8",
        ".js" => "text/javascript; charset=utf-8"
      }.freeze

      FILES = Dir[::File.join(DIRECTORY, "*.{css,js}")].to_h do |path|
        body = ::File.read(path).freeze
        [
          ::File.basename(path),
          {
            type: TYPES.fetch(::File.extname(path)),
            body: body,
            digest: Digest::SHA256.hexdigest(body)[0, 12]
          }
        ]
      end.freeze

      # @returns [Array | Nil] the Rack response for a file, or nil when there is none by that name.
      def self.response(name)
        file = FILES[name] or return nil
        [
          200,
          {
            "content-type" => file[:type],
            "cache-control" => "public, max-age=86400"
          },
          [file[:body]]
        ]
      end

      # @returns [String] the query that versions a file's URL.
      def self.version(name) = "v=#{FILES.fetch(name)[:digest]}"
    end
  end
end

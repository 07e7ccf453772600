# frozen_string_literal: true

require "json"
require "digest"
require_relative "../payload"

module Jiggler
  class Web
    # A stored job as the pages show it: the payload parsed strictly (nil when it cannot be read), and for entries of
    # the scheduled, retry and dead sets their score. A set entry is named in URLs and forms by its key,
    # "<score>-<jid>", which the store finds again with `set_entry`.
    class Entry
      # Scores a set may hold (Float#to_s writes them so, and Float() does not read them back).
      INFINITE = {
        "Infinity" => Float::INFINITY,
        "-Infinity" => -Float::INFINITY
      }.freeze

      attr_reader :payload, :score, :job

      # @parameter payload [String] as stored.
      # @parameter score [Float | Nil] the time the set orders it by.
      def initialize(payload, score = nil)
        @payload = payload
        @score = score
        @job = begin
          Payload.load(payload)
        rescue Payload::MalformedError
          nil
        end
      end

      # Splits a key into its score and jid.
      # @returns [Array(Float, String) | Nil] nil when the key is not one.
      def self.parse_key(key)
        score, _, jid = key.to_s.rpartition("-")
        number = INFINITE.fetch(score) { Float(score, exception: false) }
        [number, jid] if number && !number.nan? && jid.match?(/\A[\w.]+\z/)
      end

      def key = "#{score}-#{jid}"

      # Names a queue entry in a form without the payload, which may be megabytes: its SHA-256, in hex.
      def self.digest(payload) = Digest::SHA256.hexdigest(payload.to_s)

      def digest = Entry.digest(payload)

      def jid = job&.fetch("jid")

      def name = job ? job["name"] : "(unreadable payload)"

      def args = job ? job["args"] : []

      # A field of the job, or nil.
      def [](field) = job&.[](field)

      def error? = job&.key?("error_class") || false

      # The payload indented for reading, or as stored when it cannot be parsed.
      def pretty = job ? JSON.pretty_generate(job) : payload
    end
  end
end

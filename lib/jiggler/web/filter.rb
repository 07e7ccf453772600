# frozen_string_literal: true

require_relative "entry"

module Jiggler
  class Web
    # Finds the entries of a set whose class name or jid holds a text. It reads the set a chunk at a time and at most
    # SCAN_LIMIT entries per request, so that filtering a set of millions holds neither the request nor the store for
    # long, and it tells when it stopped before the end of the set.
    class Filter
      SCAN_LIMIT = 10_000
      CHUNK = 500

      # @returns [Integer] how many entries the last search read.
      attr_reader :scanned

      # @parameter store [Store::Redis | Store::SQLite]
      # @parameter set [Symbol] :scheduled, :retry or :dead.
      # @parameter text [String] what the class name or the jid must hold.
      # @parameter reverse [Boolean] latest first.
      def initialize(store, set, text, reverse:)
        @store = store
        @set = set
        @text = text
        @reverse = reverse
        @scanned = 0
        @stopped = false
      end

      # The matching entries from `offset` on, at most `limit`.
      # @returns [Array(Entry)]
      def entries(offset:, limit:)
        matches = []
        done = false
        until done || matches.size >= offset + limit
          chunk = [CHUNK, SCAN_LIMIT - @scanned].min
          rows = @store.set_entries(
            @set, limit: chunk, offset: @scanned, reverse: @reverse
          )
          @scanned += rows.size
          rows.each do |payload, score|
            Entry.new(payload, score).then do |entry|
              matches << entry if match?(entry)
            end
          end
          done = rows.size < chunk || (@stopped = @scanned >= SCAN_LIMIT)
        end
        matches[offset, limit] || []
      end

      # Whether the last search stopped at SCAN_LIMIT entries before it reached the end of the set.
      def stopped? = @stopped

      private

      def match?(entry)
        entry.job && (entry.name.include?(@text) || entry.jid.include?(@text))
      end
    end
  end
end

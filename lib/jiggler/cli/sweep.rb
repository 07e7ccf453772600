# frozen_string_literal: true

require_relative "../payload"
require_relative "../set_actions"

module Jiggler
  class CLI
    # Runs one admin action on every job of a scheduled, retry or dead set, or only on the jobs of one class: moves
    # them to their queues now (`run`), to the dead set (`kill`) or deletes them (`delete`). Works through the store's
    # admin methods a page at a time, as the dashboard's buttons do.
    class Sweep
      PAGE = 100
      private_constant :PAGE

      # @parameter store [Store::Redis | Store::SQLite]
      # @parameter set [Symbol] :scheduled, :retry or :dead.
      # @parameter name [String | Nil] only jobs of this class; nil for all.
      def initialize(store, set, name: nil)
        @store = store
        @set = set
        @name = name
      end

      # Applies the action to every matching job.
      # @parameter action [Symbol] :run, :kill or :delete.
      # @returns [Integer] how many jobs it was applied to.
      def call(action)
        return clear if action == :delete && @name.nil?
        done = 0
        offset = 0
        loop do
          page = @store.set_entries(@set, limit: PAGE, offset: offset, filter: @name)
          return done if page.empty?
          entries = page.filter_map { |payload, score| entry(payload, score) }
          moved = entries.empty? ? 0 : apply(action, entries)
          done += moved
          offset += page.size - moved # the jobs left behind: of other classes, unreadable, or changed meanwhile
        end
      end

      private

      # The same action as the dashboard's button for it (SetActions).
      def apply(action, entries) = SetActions.public_send(action, @store, @set, entries)

      # Empties the whole set. @returns [Integer] how many jobs it held.
      def clear
        size = @store.counts.fetch(@set)
        @store.clear_set(@set)
        size
      end

      # The score and jid by which the store finds a job, when it is one of the class asked for.
      def entry(payload, score)
        job = Payload.load(payload)
        [score, job["jid"]] if @name.nil? || job["name"] == @name
      rescue Payload::MalformedError
        nil
      end
    end
  end
end

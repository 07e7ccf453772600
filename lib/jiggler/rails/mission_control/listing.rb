# frozen_string_literal: true

require_relative "location"

module Jiggler
  module Rails
    module MissionControl
      # The jobs of one Mission Control status, as lists of the store read one after another as if
      # they were one: pending jobs are the queues' (in name order, each next to run first), failed
      # jobs the dead set's (newest first) then the retry set's (next retry first), scheduled jobs
      # the scheduled set's (soonest first), and jobs in progress the running jobs of the live
      # processes. Each list is read a page at a time through the store's admin reads, so a page
      # costs the same whatever the sizes.
      class Listing
        # Jobs read at a time when a listing is searched.
        CHUNK = 1000

        # One list: its size, and a callable that reads `limit` Locations from `offset`.
        Segment = Struct.new(:size, :reader)
        private_constant :Segment

        # The listing of a status.
        # @parameter store [Store::Redis | Store::SQLite]
        # @parameter status [Symbol | Nil] :pending, :failed, :scheduled or :in_progress; nil for
        #   every job.
        # @parameter queue [String | Nil] only the pending jobs of this queue.
        # @parameter running [Proc] returns the running jobs' Locations.
        # @raises [ActiveJob::Errors::QueryError] for a status jiggler does not keep (finished,
        #   blocked).
        def self.for(store, status, queue: nil, running: -> { [] })
          builder = Builder.new(store)
          segments = case status
          when :pending then builder.queues(queue)
          when :failed then builder.failed
          when :scheduled then [builder.set(:scheduled)]
          when :in_progress then [builder.list(running.call)]
          when nil then builder.everything(running.call)
          else
            raise ActiveJob::Errors::QueryError,
              "jiggler keeps no #{status} jobs"
          end
          new(segments)
        end

        # @parameter segments [Array(Segment)]
        def initialize(segments)
          @segments = segments
        end

        # How many jobs the lists held when they were counted.
        def count = @segments.sum(&:size)

        # Up to `limit` jobs from `offset`, across the lists.
        # @returns [Array(Location)]
        def page(offset, limit)
          @segments.each_with_object([]) do |segment, found|
            break found if limit <= 0
            next offset -= segment.size if offset >= segment.size
            taken = segment.reader.call(
              offset, [limit, segment.size - offset].min
            )
            found.concat(taken)
            limit -= taken.size
            offset = 0
          end
        end

        # The first job whose stored payload the block accepts, reading every list a chunk at a
        # time.
        # @yields {|payload| ...}
        # @returns [Location | Nil]
        def find(&block)
          @segments.each do |segment|
            (0..).step(CHUNK) do |offset|
              chunk = segment.reader.call(offset, CHUNK)
              found = chunk.find { |location| block.call(location.payload) }
              return found if found
              break if chunk.size < CHUNK
            end
          end
          nil
        end

        # Makes the segments of the store's lists.
        class Builder
          def initialize(store)
            @store = store
          end

          # The queues' segments: one queue's, or every queue's in name order.
          def queues(only)
            sizes = @store.queue_sizes
            names = only ? [only] : sizes.keys.grep(String).sort
            names.map do |name|
              Segment.new(sizes.fetch(name, 0), queue_reader(name))
            end
          end

          # The dead set, newest first, then the retry set, next retry first.
          def failed = [set(:dead, reverse: true), set(:retry)]

          # Every job: failed, scheduled, pending and running.
          def everything(running)
            failed + [set(:scheduled)] + queues(nil) + [list(running)]
          end

          # A sorted set's segment.
          def set(name, reverse: false)
            Segment.new(counts.fetch(name), lambda do |offset, limit|
              entries = @store.set_entries(
                name, limit: limit, offset: offset, reverse: reverse
              )
              entries.map do |payload, score|
                Location.new(place: name, score:, payload:)
              end
            end)
          end

          # A segment of Locations already read.
          def list(locations)
            Segment.new(
              locations.size,
              ->(offset, limit) { locations[offset, limit] || [] }
            )
          end

          private

          def counts = @counts ||= @store.counts

          def queue_reader(name)
            lambda do |offset, limit|
              @store.queue_entries(name, limit: limit, offset: offset)
                .map do |payload|
                  Location.new(place: :queue, name: name, payload: payload)
                end
            end
          end
        end
        private_constant :Builder
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Iteration
    # Enumerators of [item, cursor] pairs for `build_enumerator`. A cursor names the item it comes with; given back as
    # `cursor:`, the enumerator starts after that item. nil starts at the beginning.
    module Enumerators
      # The Integers from `start` to `finish` (inclusive), each its own cursor.
      # @parameter start [Integer]
      # @parameter finish [Integer]
      # @parameter cursor [Integer | Nil] the last number done.
      # @returns [Enumerator]
      def enum_range(start, finish, cursor:)
        unless start.is_a?(Integer) && finish.is_a?(Integer)
          raise ArgumentError,
            "enum_range takes Integer bounds " \
            "(got #{start.inspect}, #{finish.inspect})"
        end
        from = cursor.nil? ? start : Iteration.integer_cursor!(cursor) + 1
        Enumerator.new(finish - from + 1) do |yielder|
          number = from
          while number <= finish
            yielder.yield(number, number)
            number += 1
          end
        end
      end

      # The elements of an Array, each with its index as its cursor. The array must be the same at each run (built
      # from the job's arguments, or read in a stable order).
      # @parameter cursor [Integer | Nil] the index of the last element done.
      # @returns [Enumerator]
      def enum_array(array, cursor:)
        unless array.is_a?(Array)
          raise ArgumentError, "enum_array takes an Array (got #{array.class})"
        end
        from = cursor.nil? ? 0 : Iteration.integer_cursor!(cursor) + 1
        Enumerator.new([array.size - from, 0].max) do |yielder|
          index = from
          while index < array.size
            yielder.yield(array[index], index)
            index += 1
          end
        end
      end

      # Slices of `size` elements of an Array (each_slice), each with its number as its cursor: each_iteration gets
      # a slice, and a checkpoint counts slices.
      # @parameter cursor [Integer | Nil] the number of the last slice done.
      # @returns [Enumerator]
      def enum_slices(array, size, cursor:)
        unless array.is_a?(Array)
          raise ArgumentError, "enum_slices takes an Array (got #{array.class})"
        end
        unless size.is_a?(Integer) && size >= 1
          raise ArgumentError,
            "enum_slices takes a slice size >= 1 (got #{size.inspect})"
        end
        slices = enum_array(array.each_slice(size).to_a, cursor: cursor)
        Enumerator.new(slices.size) do |yielder|
          slices.each { |slice, number| yielder.yield(slice, number) }
        end
      end
    end
  end
end

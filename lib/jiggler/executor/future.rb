# frozen_string_literal: true

module Jiggler
  class Executor
    # The result of one submitted item, filled in by an executor thread once the item (or the batch holding it) has
    # been processed. Waiting is built on Mutex and ConditionVariable, which Ruby hands to the fiber scheduler when
    # there is one: a thread that calls `get` sleeps, a fiber inside an Async reactor lets its siblings run.
    class Future
      def initialize
        @mutex = Thread::Mutex.new
        @settled = Thread::ConditionVariable.new
        @state = :pending
        @value = nil
        @error = nil
      end

      # Waits until the item has been processed and returns the block's value for it (in batch mode, the block's
      # value for the whole batch).
      # @returns [Object] what the executor's block returned.
      # @raises [Exception] whatever the block raised, re-raised here.
      # @raises [Executor::KilledError] when the executor was killed before the item was processed.
      # @asynchronous Blocks the thread, or only the fiber inside an Async reactor.
      def get
        if @state == :pending
          @mutex.synchronize { @settled.wait(@mutex) while @state == :pending }
        end
        raise @error if @state == :rejected
        @value
      end

      # Whether the item has been processed (or dropped); `get` returns at once when it has.
      # @returns [Boolean]
      def done? = @state != :pending

      # Sets the value and wakes every waiter. Used by the executor; the first of `resolve` and `reject` wins.
      # @parameter value [Object] the block's return value.
      # @returns [Boolean] whether this call settled the future.
      def resolve(value) = settle(:resolved, value, nil)

      # Sets the error `get` re-raises and wakes every waiter. Used by the executor; the first of `resolve` and
      # `reject` wins.
      # @parameter error [Exception]
      # @returns [Boolean] whether this call settled the future.
      def reject(error) = settle(:rejected, nil, error)

      def inspect = "#<#{self.class} #{@state}>"

      private

      def settle(state, value, error)
        @mutex.synchronize do
          return false unless @state == :pending
          @value = value
          @error = error
          @state = state
          @settled.broadcast
        end
        true
      end
    end
  end
end

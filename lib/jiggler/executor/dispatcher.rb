# frozen_string_literal: true

module Jiggler
  class Executor
    # The thread behind one buffer: it takes each batch as the buffer's flush rule releases it and waits for a free
    # executor thread to hand it to. While every executor thread is busy, new items pile up in the buffer, so the next
    # batch is bigger (up to the batch size) and a full buffer holds producers back.
    class Dispatcher
      # @parameter buffer [Buffer] where the items come from.
      # @parameter pool [Pool] where they go.
      # @parameter logger [Logger | Nil] told if the thread dies of an error.
      def initialize(buffer, pool, logger: nil)
        @buffer = buffer
        @pool = pool
        @logger = logger
      end

      # Starts the thread; it runs until the buffer is closed and empty, or killed.
      # @parameter index [Integer] for the thread's name.
      # @returns [Dispatcher]
      def start(index = 0)
        @thread = Thread.new { run }
        @thread.name = "jiggler.executor.dispatcher.#{index}"
        self
      end

      # Waits for the thread to end.
      def join = @thread&.join

      private

      def run
        while (batch = @buffer.take)
          @pool.assign(*batch)
        end
      rescue => error
        @logger&.error(
          "executor dispatcher #{Thread.current.name} stopped: " \
          "#{error.class}: #{error.message}"
        )
        raise
      end
    end
  end
end

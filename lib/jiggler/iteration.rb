# frozen_string_literal: true

require_relative "error"
require_relative "job"
require_relative "payload"
require_relative "iteration/enumerators"

module Jiggler
  # A job that works through items one at a time and resumes where it stopped: the class builds an enumerator of
  # [item, cursor] pairs and handles one item per `each_iteration`.
  #
  #   class ReindexProducts
  #     include Jiggler::Job
  #     include Jiggler::Iteration
  #     job_options checkpoint: {every: 500, seconds: 5}
  #
  #     def build_enumerator(shop_id, cursor:) = enum_range(1, Product.maximum_id(shop_id), cursor: cursor)
  #
  #     def each_iteration(product_id, shop_id) = Search.reindex(shop_id, product_id)
  #   end
  #
  # The cursor of the last item done is saved in the job's payload (a checkpoint) every `every` items or `seconds`
  # seconds, whichever comes first (default: every 5 seconds). A server that is quieting or stopping ends the job
  # between two items, saves its cursor and puts it back at the head of its queue at once, without counting an
  # attempt. After kill -9 the job runs again from its last checkpoint: at most one checkpoint's worth of items is done
  # twice. A job that fails is retried from the cursor of the last item it finished. Cancel and timeout are checked
  # between items. A checkpoint that shows progress clears the job's crash count (see JobPayload.progressed): a job
  # killed with its process while it moves on is not a poison job.
  #
  # A cursor is any JSON-native value (Integer, String, Array...) and never nil (nil means the beginning). Given to
  # `build_enumerator` as `cursor:`, the enumerator must start after the item it names.
  module Iteration
    # Raised when `build_enumerator` returns no Enumerator, or yields something else than [item, cursor] pairs with a
    # JSON-native cursor.
    class Error < Jiggler::Error; end

    # Seconds between checkpoints when the class sets none.
    CHECKPOINT_SECONDS = 5.0

    # What the job throws (to Job::SNOOZE, as `snooze` does) when it stopped for a quieting or stopping server: the
    # processor puts it back at the head of its queue with its cursor.
    class Interruption < Job::Snooze; end

    INTERRUPTED = Interruption.new(nil).freeze

    def self.included(base)
      base.include(Job) unless base.include?(Job)
      base.extend(ClassMethods)
    end

    # Checks a cursor an Enumerator helper got back. @returns [Integer]
    def self.integer_cursor!(cursor)
      return cursor if cursor.is_a?(Integer)
      raise Error,
        "this enumerator's cursor is an Integer " \
        "(got #{Payload.preview(cursor)}): was the enumerator changed?"
    end

    # Marks the class: the server gives its jobs their delivery (cursor, checkpoints, stop requests).
    module ClassMethods
      def jiggler_iterable? = true
    end

    include Enumerators

    # The server's view of this run, set before `perform` (Server::Iterations::Delivery); nil outside a server.
    attr_writer :iteration

    # The cursor of the last item done (nil before the first).
    attr_reader :cursor

    # Works through the enumerator; see the module's comment.
    def perform(*args)
      delivery = @iteration
      @cursor = delivery&.cursor
      enumerator = build_enumerator(*args, cursor: @cursor)
      unless enumerator.is_a?(Enumerator)
        raise Error,
          "#{self.class}#build_enumerator must return an Enumerator of " \
          "[item, cursor] pairs (got #{Payload.preview(enumerator)}); " \
          "see Jiggler::Iteration::Enumerators"
      end
      @cursor.nil? ? on_start : on_resume
      return unless iterate(enumerator, args, delivery)
      on_complete
      nil
    ensure
      # a failure, a cancel or a timeout writes the job with it
      delivery&.keep(@cursor)
    end

    # Override: the enumerator of [item, cursor] pairs that starts after `cursor` (nil: at the beginning).
    # @returns [Enumerator]
    def build_enumerator(*args, cursor:)
      raise NotImplementedError,
        "#{self.class} must define build_enumerator(*args, cursor:)"
    end

    # Override: does one item; takes the job's arguments after it.
    def each_iteration(item, *args)
      raise NotImplementedError,
        "#{self.class} must define each_iteration(item, *args)"
    end

    # Hooks, each called once per run: the first run (`on_start`) or a later one (`on_resume`), a run stopped for the
    # server's shutdown (`on_stop`), the run that did the last item (`on_complete`).
    def on_start = nil

    def on_resume = nil

    def on_stop = nil

    def on_complete = nil

    private

    # @returns [Boolean] whether every item was done (false: cancelled or timed out between two items).
    def iterate(enumerator, args, delivery)
      every, seconds = checkpoint_options
      done = 0
      saved_at = monotonic
      enumerator.each do |item, cursor|
        each_iteration(item, *args)
        @cursor = cursor!(cursor, item)
        return false if cancelled?
        next unless delivery
        done += 1
        if (every && done >= every) || monotonic - saved_at >= seconds
          delivery.checkpoint(@cursor)
          done = 0
          saved_at = monotonic
        end
        interrupt(delivery) if delivery.stopping?
      end
      true
    end

    # Ends this run for the server's shutdown: the processor requeues the job with the cursor `perform` keeps.
    def interrupt(delivery)
      on_stop
      delivery.keep(@cursor)
      throw(Job::SNOOZE, INTERRUPTED)
    end

    def cursor!(cursor, item)
      return cursor if cursor.is_a?(Integer) || cursor.is_a?(String)
      if cursor.nil?
        raise Error,
          "#{self.class}#build_enumerator must yield [item, cursor] pairs " \
          "with a cursor that is not nil " \
          "(got the item #{Payload.preview(item)} with none)"
      end
      problem = Payload.problem_with(cursor) or return cursor
      raise Error,
        "#{self.class}: the cursor #{Payload.preview(cursor)} cannot be " \
        "saved: #{problem}. A cursor is JSON-native: Integer, String, " \
        "finite Float, true, false, or Arrays and String-keyed Hashes " \
        "of these."
    end

    def checkpoint_options
      options = self.class.job_options[:checkpoint] || {}
      [options[:every], options[:seconds] || CHECKPOINT_SECONDS]
    end

    def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end

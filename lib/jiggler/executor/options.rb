# frozen_string_literal: true

module Jiggler
  class Executor
    # A checked, frozen set of executor settings, and the builder behind the chained initializers:
    # `Executor.interval(0.1).threads(4).batch(true).new`. As proco's options do, a value of the wrong type raises
    # TypeError (interval not a number, a count not an Integer) and a value out of range or not among the allowed
    # ones ArgumentError (a count below 1, a negative interval, a batch that is not true or false). A logger that
    # cannot log raises TypeError (proco takes anything and fails when it logs). Each setter returns a new Options
    # with that one value changed, so a partly built Options can be kept and extended in several ways; `new` builds
    # the executor.
    class Options
      DEFAULTS = {
        threads: 1,
        queues: 1,
        queue_size: 1000,
        interval: 0,
        batch: false,
        batch_size: nil,
        logger: nil
      }.freeze
      LOG_LEVELS = %i[debug warn error].freeze

      # @parameter values [Hash] any of the keys of DEFAULTS.
      # @raises [TypeError] for a value of the wrong type.
      # @raises [ArgumentError] for an unknown key, a value out of range or a batch that is not true or false.
      def initialize(**values)
        unknown = values.keys - DEFAULTS.keys
        if unknown.any?
          raise ArgumentError,
            "unknown executor option #{unknown.first.inspect} " \
            "(known: #{DEFAULTS.keys.join(", ")})"
        end
        @values = DEFAULTS.merge(values).freeze
        check
        freeze
      end

      # @parameter count [Integer] executor threads in the pool (at least 1).
      # @returns [Options]
      def threads(count) = with(threads: count)

      # @parameter count [Integer] queues, each with a dispatcher thread of its own (at least 1).
      # @returns [Options]
      def queues(count) = with(queues: count)

      # @parameter size [Integer] items each queue holds before `submit` and `submit!` block (at least 1).
      # @returns [Options]
      def queue_size(size) = with(queue_size: size)

      # @parameter seconds [Numeric] in batch mode, the longest an item waits for its batch to fill (0 or more).
      # @returns [Options]
      def interval(seconds) = with(interval: seconds)

      # @parameter enabled [Boolean] hand the block arrays of items instead of single items.
      # @returns [Options]
      def batch(enabled) = with(batch: enabled)

      # @parameter size [Integer | Nil] the most items in one batch (at least 1); nil allows a whole queue.
      # @returns [Options]
      def batch_size(size) = with(batch_size: size)

      # @parameter logger [Logger | Nil] where the executor logs its own warnings and errors; nil logs nothing.
      # @returns [Options]
      def logger(logger) = with(logger: logger)

      # Builds an executor with these settings.
      # @parameter overrides [Hash] settings to change on top, as for `Executor.new`.
      # @returns [Executor]
      # @raises [ArgumentError] for an unknown option or a value out of range.
      def new(**overrides) = Executor.new(**@values, **overrides)

      # @returns [Hash] every setting, defaults included.
      def to_h = @values

      def inspect
        "#<#{self.class} " \
          "#{@values.map { |key, value| "#{key}=#{value.inspect}" }.join(" ")}" \
          ">"
      end

      private

      def with(**changes) = Options.new(**@values, **changes)

      def check
        %i[threads queues queue_size].each { |key| positive_integer(key) }
        positive_integer(:batch_size) unless @values[:batch_size].nil?
        check_interval
        # One of a set of values, not a type: ArgumentError, as proco's option_initializer raises for a set.
        unless [true, false].include?(@values[:batch])
          raise ArgumentError,
            "executor batch must be true or false " \
            "(got #{@values[:batch].inspect})"
        end
        logger = @values[:logger]
        unless logger.nil? ||
            LOG_LEVELS.all? { |level| logger.respond_to?(level) }
          refuse_type(:logger, "a Logger (or nil)")
        end
      end

      def check_interval
        interval = @values[:interval]
        unless interval.is_a?(Numeric) && interval.real?
          refuse_type(:interval, "a number of seconds")
        end
        return if interval >= 0 && interval.finite?
        raise ArgumentError,
          "executor interval must be a number of seconds, 0 or more " \
          "(got #{interval.inspect})"
      end

      def positive_integer(key)
        value = @values[key]
        refuse_type(key, "a positive Integer") unless value.is_a?(Integer)
        unless value.positive?
          raise ArgumentError,
            "executor #{key} must be a positive Integer (got #{value.inspect})"
        end
      end

      def refuse_type(key, allowed)
        raise TypeError,
          "executor #{key} must be #{allowed} (got #{@values[key].inspect})"
      end
    end
  end
end

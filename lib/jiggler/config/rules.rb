# frozen_string_literal: true

require_relative "../logger"
require_relative "redaction"
require_relative "redis_url"
require_relative "database_url"
require_relative "sqlite_path"
require_relative "../queue_name"

module Jiggler
  class Config
    # What each setting accepts. `check` returns the value in its normal form or raises InvalidError.
    module Rules
      MODES = %i[at_least_once at_most_once].freeze
      RECURRING_MISSED = %i[skip run_once].freeze
      # Worker fibers per process at most: each has a stack of its own, and more than this would wait on the store's
      # connections and the CPU rather than run.
      CONCURRENCY_MAX = 10_000

      module_function

      # Checks one setting and returns it in its normal form.
      # @raises [InvalidError]
      def check(key, value)
        case key
        when :concurrency then concurrency(value)
        when :client_concurrency, :dead_max_jobs, :max_crashes
          positive_integer(key, value)
        when :timeout, :stats_interval, :poll_interval, :dead_timeout,
          :recovery_timeout, :done_retention, :metrics_retention
          positive_number(key, value)
        when :client_async, :poller_enabled, :metrics, :transactional_enqueue
          boolean(key, value)
        when :environment, :require, :config_file, :recurring_file
          optional_string(key, value)
        when :sqlite_path then SQLitePath.check(value)
        when :sqlite_synchronous then synchronous(value)
        when :redis_url then RedisURL.check(value)
        when :database_url then DatabaseURL.check(value)
        when :namespace then string(key, value)
        when :client_redis_pool then pool(key, value)
        when :queues then queues(value)
        when :weighted_queues then weighted_queues(value)
        when :mode then mode(value)
        when :processes then processes(value)
        when :error_handlers, :death_handlers then handlers(key, value)
        when :recurring then recurring(value)
        when :recurring_missed then recurring_missed(value)
        when :log_format then log_format(value)
        else raise InvalidError, unknown_key_message(key)
        end
      end

      # Reads a setting's default from an environment variable, checked like the setting.
      # @parameter key [Symbol] the setting.
      # @parameter variable [String] the variable's name, which the error names.
      # @returns [Object | Nil] the checked value; nil when the variable is unset.
      # @raises [InvalidError]
      def from_env(key, variable)
        value = ENV[variable] or return nil
        check(key, value)
      rescue InvalidError => error
        raise InvalidError, error.message.sub("config[:#{key}]", variable)
      end

      # Normalizes a list of queues to `[name, priority]` pairs, highest priority first (ties keep their order).
      def queues(value)
        list = value.is_a?(String) ? [value] : value
        unless list.is_a?(Array) && list.any?
          fail!(
            :queues,
            "a non-empty Array of names or [name, priority] pairs",
            value
          )
        end
        pairs = list.map { |entry| queue_pair(entry) }
        repeated = pairs.map(&:first).tally.select { |_, count| count > 1 }.keys
        if repeated.any?
          fail!(
            :queues,
            "a list without repeated names " \
            "(#{repeated.join(", ")} appears twice)",
            value
          )
        end
        pairs.each_with_index
          .sort_by { |(_, priority), index| [-priority, index] }
          .map(&:first)
      end

      # Normalizes weighted queues, a Hash of names to weights or [name, weight] pairs, to `[name, weight]` pairs.
      def weighted_queues(value)
        list = value.is_a?(Hash) ? value.to_a : value
        unless list.is_a?(Array) && list.any? &&
            list.all? { |entry| weighted_pair?(entry) }
          fail!(
            :weighted_queues,
            "queue names with a positive Integer weight each " \
            "({\"critical\" => 6, \"default\" => 1})",
            value
          )
        end
        pairs = list.map { |name, weight| [name.to_s, weight] }
        repeated = pairs.map(&:first).tally.select { |_, count| count > 1 }.keys
        if repeated.any?
          fail!(
            :weighted_queues,
            "a list without repeated names " \
            "(#{repeated.join(", ")} appears twice)",
            value
          )
        end
        pairs
      end

      # Reads recurring tasks (see RecurringTask), loading fugit only when there are some.
      # @returns [Hash(String, RecurringTask)]
      def recurring(value)
        unless value.is_a?(Hash)
          fail!(
            :recurring,
            "a Hash of task names to their settings " \
            "(class:, schedule:, args:, queue:)",
            value
          )
        end
        return {}.freeze if value.empty?
        require_relative "../recurring_task"
        value.to_h do |name, task|
          [
            name.to_s,
            task.is_a?(RecurringTask) ? task : RecurringTask.build(name, task)
          ]
        end.freeze
      end

      def recurring_missed(value)
        missed = value.is_a?(String) ? value.to_sym : value
        return missed if RECURRING_MISSED.include?(missed)
        fail!(
          :recurring_missed,
          "one of #{RECURRING_MISSED.map(&:inspect).join(", ")}",
          value
        )
      end

      def log_format(value)
        format = value.is_a?(String) ? value.to_sym : value
        return format if Logger::FORMATS.include?(format)
        fail!(
          :log_format,
          "one of #{Logger::FORMATS.map(&:inspect).join(", ")}",
          value
        )
      end

      def unknown_key_message(key)
        "unknown jiggler setting #{key.inspect}; " \
          "known settings: #{DEFAULTS.keys.join(", ")}"
      end

      def queue_pair(entry)
        name, priority = entry.is_a?(Array) ? entry : [entry, 0]
        name = name.to_s if name.is_a?(Symbol)
        unless QueueName.valid?(name) && priority.is_a?(Integer) &&
            (entry.is_a?(Array) ? entry.size == 2 : true)
          fail!(
            :queues,
            "names (#{QueueName::RULE}), or [name, Integer priority] pairs",
            entry
          )
        end
        [name, priority]
      end

      def weighted_pair?(entry)
        name, weight = entry
        name = name.to_s if name.is_a?(Symbol)
        entry.is_a?(Array) && entry.size == 2 && QueueName.valid?(name) &&
          weight.is_a?(Integer) && weight.positive?
      end

      # A text with the credentials of every URL in it replaced by "***", for messages and logs (see Redaction).
      # @parameter text [String]
      # @returns [String]
      def redact(text) = Redaction.text(text)

      def processes(value)
        return "auto" if value.to_s == "auto"
        return value if value.is_a?(Integer) && value.positive?
        fail!(
          :processes, "a positive Integer or \"auto\" (one per core)", value
        )
      end

      def synchronous(value)
        return value.to_s if %w[normal full].include?(value.to_s)
        fail!(:sqlite_synchronous, "\"normal\" or \"full\"", value)
      end

      def mode(value)
        mode = value.is_a?(String) ? value.to_sym : value
        return mode if MODES.include?(mode)
        fail!(:mode, "one of #{MODES.map(&:inspect).join(", ")}", value)
      end

      def concurrency(value)
        if value.is_a?(Integer) && value.between?(1, CONCURRENCY_MAX)
          return value
        end
        fail!(
          :concurrency, "a positive Integer up to #{CONCURRENCY_MAX}", value
        )
      end

      def positive_integer(key, value)
        return value if value.is_a?(Integer) && value.positive?
        fail!(key, "a positive Integer", value)
      end

      def positive_number(key, value)
        return value if value.is_a?(Numeric) && value.positive? && value.finite?
        fail!(key, "a positive number of seconds", value)
      end

      def boolean(key, value)
        return value if value == true || value == false
        fail!(key, "true or false", value)
      end

      def string(key, value)
        return value if value.is_a?(String) && !value.empty?
        fail!(key, "a non-empty String", value)
      end

      def optional_string(key, value)
        value.nil? ? nil : string(key, value)
      end

      def pool(key, value)
        if value.nil? || value.respond_to?(:acquire) ||
            value.respond_to?(:with)
          return value
        end
        fail!(
          key,
          "a connection pool that responds to #acquire (Async::Pool) " \
          "or #with (ConnectionPool)",
          value
        )
      end

      def handlers(key, value)
        if value.is_a?(Array) &&
            value.all? { |handler| handler.respond_to?(:call) }
          return value.dup
        end
        fail!(key, "an Array of objects that respond to #call", value)
      end

      def fail!(key, allowed, value)
        raise InvalidError,
          "config[:#{key}] must be #{allowed} (got #{value.inspect})"
      end
    end
  end
end

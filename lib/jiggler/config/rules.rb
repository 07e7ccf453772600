# frozen_string_literal: true

module Jiggler
  class Config
    # What each setting accepts. `check` returns the value in its normal form or raises InvalidError.
    module Rules
      MODES = %i[at_least_once at_most_once].freeze
      RECURRING_MISSED = %i[skip run_once].freeze
      QUEUE_NAME = /\A[^\s|{}]+\z/
      REDIS_URL = %r{\A(redis|rediss|unix)://.+}

      module_function

      # Checks one setting and returns it in its normal form.
      # @raises [InvalidError]
      def check(key, value)
        case key
        when :client_concurrency, :concurrency, :dead_max_jobs, :max_crashes then positive_integer(key, value)
        when :timeout, :stats_interval, :poll_interval, :dead_timeout, :recovery_timeout, :done_retention
          positive_number(key, value)
        when :client_async, :poller_enabled then boolean(key, value)
        when :environment, :require, :config_file, :sqlite_path, :recurring_file then optional_string(key, value)
        when :sqlite_synchronous then synchronous(value)
        when :redis_url then redis_url(value)
        when :namespace then string(key, value)
        when :client_redis_pool then pool(key, value)
        when :queues then queues(value)
        when :mode then mode(value)
        when :recurring then recurring(value)
        when :recurring_missed then recurring_missed(value)
        else raise InvalidError, unknown_key_message(key)
        end
      end

      # Normalizes a list of queues to `[name, priority]` pairs, highest priority first (ties keep their order).
      def queues(value)
        list = value.is_a?(String) ? [value] : value
        fail!(:queues, "a non-empty Array of names or [name, priority] pairs", value) unless list.is_a?(Array) && list.any?
        pairs = list.map { |entry| queue_pair(entry) }
        repeated = pairs.map(&:first).tally.select { |_, count| count > 1 }.keys
        fail!(:queues, "a list without repeated names (#{repeated.join(", ")} appears twice)", value) if repeated.any?
        pairs.each_with_index.sort_by { |(_, priority), index| [-priority, index] }.map(&:first)
      end

      # Reads recurring tasks (see RecurringTask), loading fugit only when there are some.
      # @returns [Hash(String, RecurringTask)]
      def recurring(value)
        fail!(:recurring, "a Hash of task names to their settings (class:, schedule:, args:, queue:)", value) unless value.is_a?(Hash)
        return {}.freeze if value.empty?
        require_relative "../recurring_task"
        value.to_h { |name, task| [name.to_s, task.is_a?(RecurringTask) ? task : RecurringTask.build(name, task)] }.freeze
      end

      def recurring_missed(value)
        missed = value.is_a?(String) ? value.to_sym : value
        return missed if RECURRING_MISSED.include?(missed)
        fail!(:recurring_missed, "one of #{RECURRING_MISSED.map(&:inspect).join(", ")}", value)
      end

      def unknown_key_message(key)
        "unknown jiggler setting #{key.inspect}; known settings: #{DEFAULTS.keys.join(", ")}"
      end

      def queue_pair(entry)
        name, priority = entry.is_a?(Array) ? entry : [entry, 0]
        name = name.to_s if name.is_a?(Symbol)
        unless name.is_a?(String) && QUEUE_NAME.match?(name) && priority.is_a?(Integer) && (entry.is_a?(Array) ? entry.size == 2 : true)
          fail!(:queues, "names without spaces, '|' or braces, or [name, Integer priority] pairs", entry)
        end
        [name, priority]
      end

      def redis_url(value)
        return value if value.nil? || (value.is_a?(String) && REDIS_URL.match?(value))
        fail!(:redis_url, "a redis://, rediss:// or unix:// URL", value)
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
        return value if value.nil? || value.respond_to?(:acquire) || value.respond_to?(:with)
        fail!(key, "a connection pool that responds to #acquire (Async::Pool) or #with (ConnectionPool)", value)
      end

      def fail!(key, allowed, value)
        raise InvalidError, "config[:#{key}] must be #{allowed} (got #{value.inspect})"
      end
    end
  end
end

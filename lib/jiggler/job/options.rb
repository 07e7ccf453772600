# frozen_string_literal: true

require_relative "../config/rules"

module Jiggler
  module Job
    # The options a job class or a `with_options` call may set, and their checks.
    module Options
      DEFAULTS = {queue: "default", retries: 25, retry_queue: nil}.freeze

      module_function

      # Returns `base` with `changes` applied, after checking them.
      # @raises [ArgumentError] naming the option and what it accepts.
      def merge(base, changes)
        changes.each { |key, value| check(key, value) }
        base.merge(changes.to_h { |key, value| [key, value.is_a?(Symbol) ? value.to_s : value] }).freeze
      end

      def check(key, value)
        case key
        when :queue then queue_name!(key, value)
        when :retry_queue then queue_name!(key, value) unless value.nil?
        when :retries
          raise ArgumentError, "retries must be an Integer >= 0 (got #{value.inspect})" unless value.is_a?(Integer) && value >= 0
        else
          raise ArgumentError, "unknown job option #{key.inspect}; known options: #{DEFAULTS.keys.join(", ")}"
        end
      end

      def queue_name!(key, value)
        name = value.is_a?(Symbol) ? value.to_s : value
        return if name.is_a?(String) && Config::Rules::QUEUE_NAME.match?(name)
        raise ArgumentError, "#{key} must be a queue name without spaces, '|' or braces (got #{value.inspect})"
      end
    end
  end
end

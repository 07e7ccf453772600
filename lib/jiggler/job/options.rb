# frozen_string_literal: true

require_relative "../queue_name"
require_relative "../unique_job"
require_relative "../limited_job"

module Jiggler
  module Job
    # The options a job class or a `with_options` call may set, and their checks.
    module Options
      DEFAULTS = {queue: "default", retries: 25, retry_queue: nil}.freeze
      # Set only by the classes that use them: batching (`perform_batch`) and stored return values.
      OPTIONAL = %i[
        batch_size batch_interval result_ttl unique concurrency rate checkpoint
      ].freeze
      # Set by the classes or the calls that use them: seconds a job may run (Jiggler::JobTimeout after).
      PER_CALL = %i[timeout].freeze
      BATCH_SIZE_MAX = 10_000
      BATCH_INTERVAL = 1.0

      module_function

      # Returns `base` with `changes` applied, after checking them.
      # @raises [ArgumentError] naming the option and what it accepts.
      def merge(base, changes)
        changes.each { |key, value| check(key, value) }
        merged = base.merge(
          changes.to_h do |key, value|
            [key, value.is_a?(Symbol) ? value.to_s : value]
          end
        )
        merged[:unique] = UniqueJob.options(merged[:unique]) if merged[:unique]
        if merged[:concurrency]
          merged[:concurrency] = LimitedJob.options(merged[:concurrency])
        end
        merged[:rate] = LimitedJob.rate_options(merged[:rate]) if merged[:rate]
        if merged[:checkpoint]
          merged[:checkpoint] = checkpoint_options(merged[:checkpoint])
        end
        if (merged[:unique] || merged[:concurrency] || merged[:rate]) &&
            merged[:batch_size]
          raise ArgumentError,
            "batch items cannot be unique or limited: drop batch_size"
        end
        if merged[:batch_interval] && !merged[:batch_size]
          raise ArgumentError,
            "batch_interval needs batch_size: job_options batch_size: 100, " \
            "batch_interval: #{merged[:batch_interval]}"
        end
        merged[:batch_interval] ||= BATCH_INTERVAL if merged[:batch_size]
        merged.freeze
      end

      def check(key, value)
        case key
        when :queue then queue_name!(key, value)
        when :retry_queue then queue_name!(key, value) unless value.nil?
        when :retries
          unless value.is_a?(Integer) && value >= 0
            raise ArgumentError,
              "retries must be an Integer >= 0 (got #{value.inspect})"
          end
        when :batch_size
          unless value.is_a?(Integer) && value.between?(1, BATCH_SIZE_MAX)
            raise ArgumentError,
              "batch_size must be an Integer from 1 to #{BATCH_SIZE_MAX} " \
              "(got #{value.inspect})"
          end
        when :batch_interval, :result_ttl, :timeout then seconds!(key, value)
        # read once, in `merge`
        when :unique, :concurrency, :rate, :checkpoint then nil
        else
          raise ArgumentError,
            "unknown job option #{key.inspect}; known options: " \
            "#{(DEFAULTS.keys + PER_CALL + OPTIONAL).join(", ")}"
        end
      end

      # An iterable job's checkpoint (Jiggler::Iteration): every `every` items, `seconds` seconds, or both (whichever
      # comes first). @returns [Hash] frozen, with Symbol keys.
      def checkpoint_options(value)
        if value.is_a?(Hash)
          value = value.to_h { |key, setting| [key.to_sym, setting] }
        end
        if !value.is_a?(Hash) || value.empty? ||
            !(value.keys - %i[every seconds]).empty?
          raise ArgumentError,
            "checkpoint takes every: (items) and/or seconds:, " \
            "e.g. checkpoint: {every: 1000, seconds: 5} " \
            "(got #{value.inspect})"
        end
        every = value[:every]
        if !every.nil? && !(every.is_a?(Integer) && every >= 1)
          raise ArgumentError,
            "checkpoint every: must be an Integer >= 1 (got #{every.inspect})"
        end
        unless value[:seconds].nil?
          seconds!("checkpoint seconds:", value[:seconds])
        end
        value.freeze
      end

      def queue_name!(key, value)
        name = value.is_a?(Symbol) ? value.to_s : value
        return if QueueName.valid?(name)
        raise ArgumentError,
          "#{key} must be #{QueueName::RULE} (got #{value.inspect[0, 200]})"
      end

      def seconds!(key, value)
        return if value.is_a?(Numeric) && value.to_f.finite? && value.positive?
        raise ArgumentError,
          "#{key} must be a number of seconds > 0 (got #{value.inspect})"
      end
    end
  end
end

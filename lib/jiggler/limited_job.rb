# frozen_string_literal: true

require_relative "error"

module Jiggler
  # Concurrency limits: a class with `job_options concurrency: {limit: 2, key: ->(account_id, *) { account_id }}` has
  # at most `limit` jobs of one key running at once, across every process. The key is computed from the arguments when
  # the job is enqueued (the class alone without `key:`) and travels in the payload, so servers check it without
  # calling the class. A job over its limit waits outside its queue, holding no worker, and goes back to the head of
  # its queue when a slot frees (see store/contract.md, "Concurrency and rate limits"). `ttl` (seconds, default 900)
  # is how long a slot lives at most: a safety net for a job lost for good, so it must exceed the longest run.
  #
  # Rate limits: `job_options rate: {limit: 50, period: 1, key: ...}` starts at most `limit` jobs of one key in any
  # `period` seconds (a sliding window); a job over the budget is scheduled again for when the budget allows.
  #
  # Seconds (a slot's or a unique lock's ttl, a rate's period) are at most SECONDS_MAX. A payload written by another
  # client may carry anything: its limit is read as at least 1 and its seconds within (0, SECONDS_MAX], so that no
  # job waits for a slot that cannot exist or holds one forever.
  module LimitedJob
    DEFAULTS = {limit: nil, key: nil, ttl: 900}.freeze
    RATE_DEFAULTS = {limit: nil, period: 1, key: nil}.freeze
    # The longest ttl or period, in seconds: a year.
    SECONDS_MAX = 366 * 86_400

    module_function

    # Checks and completes the concurrency option's value. @returns [Hash] frozen.
    # @raises [ArgumentError] naming what is wrong.
    def options(value)
      options = read(:concurrency, value, DEFAULTS)
      positive!(:concurrency, :limit, options[:limit], Integer)
      seconds!(:concurrency, :ttl, options[:ttl])
      options.freeze
    end

    # Checks and completes the rate option's value: at most `limit` starts per `period` seconds per key.
    # @returns [Hash] frozen.
    def rate_options(value)
      options = read(:rate, value, RATE_DEFAULTS)
      positive!(:rate, :limit, options[:limit], Integer)
      seconds!(:rate, :period, options[:period])
      options.freeze
    end

    # The payload's "limits" field of one job of a class with either option.
    # @parameter options [Hash] the class's options.
    # @returns [Hash]
    def field(name, args, options)
      field = {}
      if (concurrency = options[:concurrency])
        field["concurrency"] = {
          "key" => key(name, args, concurrency),
          "limit" => concurrency[:limit],
          "ttl" => concurrency[:ttl]
        }
      end
      if (rate = options[:rate])
        field["rate"] = {
          "key" => key(name, args, rate),
          "limit" => rate[:limit],
          "period" => rate[:period]
        }
      end
      field
    end

    # Frees a job's concurrency slot, so the oldest job waiting for one of its key runs next.
    # @parameter store [Store::Redis | Store::SQLite]
    # @parameter job [Hash] a parsed payload; one without a concurrency limit holds no slot.
    def release(store, job)
      field = job["limits"]["concurrency"] if job["limits"].is_a?(Hash)
      return unless field.is_a?(Hash)
      slot = slot(field)
      store.release_slot(
        slot[:key], job["jid"].to_s, limit: slot[:limit], ttl: slot[:ttl]
      )
    end

    # A payload's concurrency field, read within bounds.
    # @parameter field [Hash] "key", "limit" and "ttl", as written by anyone.
    # @returns [Hash] key: (String), limit: (Integer, at least 1), ttl: (seconds, within (0, SECONDS_MAX]).
    def slot(field)
      field = {} unless field.is_a?(Hash)
      {
        key: field["key"].to_s,
        limit: bounded_limit(field["limit"]),
        ttl: bounded_seconds(field["ttl"], DEFAULTS[:ttl])
      }
    end

    # A payload's rate field, read within bounds.
    # @returns [Hash] key: (String), limit: (Integer, at least 1), period: (seconds, within (0, SECONDS_MAX]).
    def rate(field)
      field = {} unless field.is_a?(Hash)
      {key: field["key"].to_s, limit: bounded_limit(field["limit"]),
       period: bounded_seconds(field["period"], RATE_DEFAULTS[:period])}
    end

    def key(name, args, options)
      options[:key] ? "#{name}:#{options[:key].call(*args)}" : name
    end

    # An option's Hash with its defaults, checked for unknown keys and a key Proc (UniqueJob reads its option so too).
    def read(option, value, defaults)
      unless value.is_a?(Hash)
        raise ArgumentError,
          "#{option} must be a Hash of #{defaults.keys.join(":, ")}: " \
          "(got #{value.inspect})"
      end
      unknown = value.keys - defaults.keys
      if unknown.any?
        raise ArgumentError,
          "unknown #{option} option #{unknown.first.inspect}; " \
          "known: #{defaults.keys.join(", ")}"
      end
      options = defaults.merge(value)
      unless options[:key].nil? || options[:key].respond_to?(:call)
        raise ArgumentError,
          "#{option} key must be a Proc taking the job's arguments " \
          "(got #{options[:key].inspect})"
      end
      options
    end

    # Checks a setting is a number of seconds > 0 and at most SECONDS_MAX.
    def seconds!(option, name, value)
      return if value.is_a?(Numeric) && value.positive? && value <= SECONDS_MAX
      raise ArgumentError,
        "#{option} #{name} must be a number of seconds > 0 and at most " \
        "#{SECONDS_MAX} (a year) (got #{value.inspect})"
    end

    def bounded_limit(value)
      (value.is_a?(Numeric) && value.to_f.finite?) ? [value.to_i, 1].max : 1
    end

    # Infinity reads as SECONDS_MAX; what is not a positive number, as the default.
    def bounded_seconds(value, default)
      return default unless value.is_a?(Numeric) && value.positive?
      [value.to_f, SECONDS_MAX].min
    end

    # Checks a setting is a positive, finite Integer or number.
    def positive!(option, name, value, type)
      return if value.is_a?(type) && value.positive? && value.to_f.finite?
      raise ArgumentError,
        "#{option} #{name} must be " \
        "#{(type == Integer) ? "an Integer" : "a number"} > 0 " \
        "(got #{value.inspect})"
    end
  end
end

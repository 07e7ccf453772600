# frozen_string_literal: true

require_relative "error"

module Jiggler
  # Concurrency limits: a class with `job_options concurrency: {limit: 2, key: ->(account_id, *) { account_id }}` has
  # at most `limit` jobs of one key running at once, across every process. The key is computed from the arguments when
  # the job is enqueued (the class alone without `key:`) and travels in the payload, so servers check it without
  # calling the class. A job over its limit waits outside its queue, holding no worker, and goes back to the head of
  # its queue when a slot frees (see store/contract.md, "Concurrency and rate limits"). `ttl` (seconds, default 900)
  # is how long a slot lives at most: a safety net for a job lost for good, so it must exceed the longest run.
  module LimitedJob
    DEFAULTS = {limit: nil, key: nil, ttl: 900}.freeze

    module_function

    # Checks and completes the option's value. @returns [Hash] frozen.
    # @raises [ArgumentError] naming what is wrong.
    def options(value)
      raise ArgumentError, "concurrency must be a Hash of limit:, key:, ttl: (got #{value.inspect})" unless value.is_a?(Hash)
      unknown = value.keys - DEFAULTS.keys
      raise ArgumentError, "unknown concurrency option #{unknown.first.inspect}; known: #{DEFAULTS.keys.join(", ")}" if unknown.any?
      options = DEFAULTS.merge(value)
      raise ArgumentError, "concurrency limit must be an Integer > 0 (got #{options[:limit].inspect})" unless options[:limit].is_a?(Integer) && options[:limit].positive?
      raise ArgumentError, "concurrency ttl must be a number of seconds > 0 (got #{options[:ttl].inspect})" unless options[:ttl].is_a?(Numeric) && options[:ttl].positive?
      raise ArgumentError, "concurrency key must be a Proc taking the job's arguments (got #{options[:key].inspect})" unless options[:key].nil? || options[:key].respond_to?(:call)
      options.freeze
    end

    # The payload field of one job. @returns [Hash]
    def field(name, args, options)
      key = options[:key] ? "#{name}:#{options[:key].call(*args)}" : name
      {"key" => key, "limit" => options[:limit], "ttl" => options[:ttl]}
    end
  end
end

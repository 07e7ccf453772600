# frozen_string_literal: true

require_relative "../job/options"

module Jiggler
  module Rails
    # `jiggler_options`, which every Active Job class gets in an app that loads jiggler: the flow control a
    # `Jiggler::Job` class sets with `job_options` (unique jobs, concurrency and rate limits), with the same guarantees.
    # The adapter writes the same "unique" and "limits" fields into the payload, so the store takes the lock and the
    # server's gate and unlock apply as they do to any job. Key Procs receive the job's arguments as `perform` does
    # (records, not GlobalIDs).
    #
    #   class SyncAccountJob < ApplicationJob
    #     jiggler_options unique: {until: :started}, concurrency: {limit: 1, key: ->(account) { account.id }}
    #   end
    module JobOptions
      KEYS = %i[unique concurrency rate].freeze
      NONE = {}.freeze
      # The class that performs Active Job jobs on a server (JigglerAdapter::JobWrapper), by name.
      WRAPPER = "ActiveJob::QueueAdapters::JigglerAdapter::JobWrapper"

      # Sets this class's flow control (inherited by subclasses), or reads it with no arguments.
      # @parameter options [Hash] unique:, concurrency:, rate:, as `job_options` takes them (see UniqueJob, LimitedJob).
      # @returns [Hash] the options in force.
      # @raises [ArgumentError] for another option, or a bad value.
      def jiggler_options(**options)
        unless options.empty?
          unknown = options.keys - KEYS
          unless unknown.empty?
            raise ArgumentError,
              "jiggler_options takes #{KEYS.join(", ")} " \
              "(got #{unknown.join(", ")}): " \
              "set the queue with queue_as and retries with retry_on"
          end
          @jiggler_options =
            Job::Options.merge(jiggler_options_in_force, options)
        end
        jiggler_options_in_force
      end

      # The options a recurring task of this class enqueues with (see Server::Cron): the class's queue, no retries
      # of jiggler's (Active Job's `retry_on` retries), the wrapper that runs it, and its flow control, whose key
      # Procs get the task's arguments deserialized.
      # @returns [Hash]
      def jiggler_recurring_options
        options = {queue: new.queue_name.to_s, retries: 0, wrapper: WRAPPER}
        jiggler_options.each do |key, value|
          options[key] = value[:key] ?
            value.merge(key: deserializing(value[:key])) :
            value
        end
        options
      end

      private

      def jiggler_options_in_force
        @jiggler_options ||
          (superclass.respond_to?(:jiggler_options) ?
            superclass.jiggler_options :
            NONE)
      end

      def deserializing(key)
        ->(*args) { key.call(*::ActiveJob::Arguments.deserialize(args)) }
      end
    end
  end
end

# frozen_string_literal: true

require "active_job"
require_relative "../testing"
require_relative "../rails/job_payload"

module Jiggler
  module Testing
    # Active Job's test adapter seen by jiggler's testing modes. A Rails app tests with `queue_adapter = :test` (so
    # `ActiveJob::TestHelper` works as in any app); with `jiggler/testing` loaded, each job enqueued through that
    # adapter is also one of jiggler's: in fake mode it is kept, as the jiggler adapter would have written it (under
    # its class name, with its Active Job arguments, for `Testing.jobs_for`, `drain_all` and
    # `assert_enqueued_jiggler_job`); in inline mode it runs at once, through jiggler's client and server middleware,
    # and counts as performed for `assert_performed_jobs`. A job is run once, by whichever side runs it first: one
    # that `perform_enqueued_jobs` ran (or the test cleared) is skipped by a drain, and one a drain ran leaves the
    # adapter's enqueued jobs for its performed jobs. With testing disabled, the test adapter works alone.
    module ActiveJobMirror
      # Marker keys of Active Job's serialized Hashes that differ between a Hash and keywords of the same content.
      KEYWORDS = "_aj_ruby2_keywords"
      SYMBOL_KEYS = "_aj_symbol_keys"

      # @parameter job [ActiveJob::Base]
      def enqueue(job) = mirrored(job, nil) { super }

      # @parameter job [ActiveJob::Base]
      # @parameter timestamp [Numeric] epoch seconds.
      def enqueue_at(job, timestamp) = mirrored(job, timestamp.to_f) { super }

      private

      def mirrored(job, at)
        return yield unless Testing.enabled?
        return inline(job, at) if Testing.inline? && !perform_enqueued_jobs
        kept = enqueued_jobs.size
        yield
        if enqueued_jobs.size > kept
          Jiggler.client.push_jobs([Rails::JobPayload.build(job, at)])
        end
      end

      def inline(job, at)
        performed_jobs << job_to_hash(job, at ? {at: at} : {})
        Jiggler.client.push_jobs([Rails::JobPayload.build(job, at)])
      end

      class << self
        # Whether a kept Active Job job is still to run; if so, moves it from the test adapter's enqueued jobs to
        # its performed jobs, as `perform_enqueued_jobs` does. A job not enqueued through the test adapter runs.
        # @parameter job [Hash] a kept payload with an "active_job" field.
        # @returns [Boolean]
        def take(job)
          adapter = ::ActiveSupport::Inflector
            .constantize(job["active_job"]["job_class"])
            .queue_adapter
          unless adapter.is_a?(::ActiveJob::QueueAdapters::TestAdapter)
            return true
          end
          entry = adapter.enqueued_jobs.find do |data|
            data["job_id"] == job["active_job"]["job_id"]
          end
          return false unless entry
          adapter.enqueued_jobs.delete(entry)
          adapter.performed_jobs << entry
          true
        end

        # Arguments as a test names them, in the form kept jobs have: serialized by Active Job (a record as its
        # GlobalID), keywords and a Hash of Symbol keys alike.
        # @parameter args [Array]
        # @returns [Array]
        def expected(args) = comparable(::ActiveJob::Arguments.serialize(args))

        # Serialized arguments with keywords marked as a Hash of Symbol keys is.
        def comparable(value)
          case value
          when Array then value.map { |item| comparable(item) }
          when Hash
            value.to_h do |key, item|
              [(key == KEYWORDS) ? SYMBOL_KEYS : key, comparable(item)]
            end
          else value
          end
        end

        # Whether a job class (or its name) is an Active Job class.
        def active_job?(job_class)
          klass = job_class.is_a?(Class) ?
            job_class :
            ::ActiveSupport::Inflector.safe_constantize(job_class.to_s)
          klass.is_a?(Class) && klass < ::ActiveJob::Base
        end
      end
    end

    ::ActiveJob::QueueAdapters::TestAdapter.prepend(ActiveJobMirror)
  end
end

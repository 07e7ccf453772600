# frozen_string_literal: true

require "active_job"
require_relative "../job"
require_relative "job_payload"

module ActiveJob
  module QueueAdapters
    # Active Job on jiggler: `config.active_job.queue_adapter = :jiggler`.
    #
    # Each job is stored under its own class name and arguments (so the dashboard, the summary and the logs show
    # `InvoiceJob` and its arguments), with Active Job's other fields beside them, and run by JobWrapper. Retries are
    # Active Job's (`retry_on`): jiggler does not retry on its own (`retries: 0`), so an error that escapes the job,
    # its retries used up or never rescued, sends it to jiggler's dead set with the error. A job whose class the
    # server cannot load did not start: it is retried with backoff all the same. Job priorities are kept with the job
    # but not used: jiggler orders work by queue priority.
    class JigglerAdapter < (defined?(AbstractAdapter) ? AbstractAdapter : Object)
      # The class that runs Active Job jobs on a jiggler server.
      class JobWrapper
        include Jiggler::Job

        # Marks a class that a payload's "wrapper" field may name: the server runs no other class in a job's place.
        def self.jiggler_wrapper? = true

        # Runs the Active Job job stored in `job`, a jiggler payload.
        # @parameter job [Hash]
        # @raises [Jiggler::UnknownJobError] when the job's class cannot be loaded here: the job
        #   did not start, and is retried with backoff as any job of an unknown class is.
        def perform(job)
          data = job["active_job"].merge(
            "arguments" => job["args"], "provider_job_id" => job["jid"]
          )
          check_class(data["job_class"])
          Base.execute(data)
        end

        private

        # Loads the job's class (autoloaded where the app autoloads) before Active Job would fail on it, and makes
        # sure it is an Active Job class: Active Job would call `new` on whatever class the payload names.
        def check_class(name)
          if name.is_a?(String)
            klass = ActiveSupport::Inflector.safe_constantize(name)
          end
          return if klass.is_a?(Class) && klass < Base
          if klass
            raise Jiggler::UnknownJobError, "#{name} is not an Active Job class"
          end
          error = Jiggler::UnknownJobError.new(
            "unknown Active Job class #{name.inspect}: " \
            "is it in the app this server runs?"
          )
          # retried with backoff, whatever its retries
          raise error.extend(Jiggler::UnknownJobError::NotLoaded)
        end
      end

      # Whether Active Job (7.2) holds a job enqueued inside a transaction until it commits: not with
      # `transactional_enqueue`, which writes the job in the transaction itself (a process that dies between the commit
      # and a later enqueue would lose it).
      def enqueue_after_transaction_commit?
        !Jiggler.config[:transactional_enqueue]
      end

      # Enqueues a job to run now.
      # @raises [EnqueueError] when it was not written: its unique lock is taken, or a client middleware stopped it.
      def enqueue(job) = enqueue_one(job, scheduled_at(job))

      # Enqueues a job to run at `timestamp` (epoch seconds).
      # @raises [EnqueueError] as `enqueue` does.
      def enqueue_at(job, timestamp) = enqueue_one(job, timestamp.to_f)

      # Enqueues many jobs in one round trip per queue (`perform_all_later`); those not written (a unique lock taken,
      # a middleware's refusal) are marked not successfully enqueued.
      # @returns [Integer] how many were enqueued.
      def enqueue_all(jobs) = push(jobs, jobs.map { |job| scheduled_at(job) })

      private

      def enqueue_one(job, at)
        return if push([job], [at]) == 1
        raise EnqueueError,
          "#{job.class.name} was not enqueued: its unique lock is taken, " \
          "or a client middleware stopped it"
      end

      def push(jobs, times)
        payloads = jobs.each_with_index.map do |job, index|
          Jiggler::Rails::JobPayload.build(job, times[index])
        end
        jids = write(jobs, payloads)
        jobs.each_with_index do |job, index|
          job.provider_job_id = jids[index]
          if job.respond_to?(:successfully_enqueued=)
            job.successfully_enqueued = !jids[index].nil?
          end
        end
        jids.compact.size
      end

      # Writes the payloads in one call, or one per unique class, whose options take each job's lock.
      # @returns [Array(String | Nil)] the ids, in order; nil for a job not written.
      def write(jobs, payloads)
        groups = payloads.each_index.group_by do |index|
          Jiggler::Rails::JobPayload.client_options(jobs[index])
        end
        jids = []
        groups.each do |options, indexes|
          written = Jiggler.client.push_jobs(
            payloads.values_at(*indexes), batch: options
          )
          indexes.each_with_index do |index, position|
            jids[index] = written[position]
          end
        end
        jids
      end

      # When the job is to run, in epoch seconds, or nil for now (Rails 7.1 keeps the Time aside from scheduled_at).
      def scheduled_at(job)
        time = job.respond_to?(:_scheduled_at_time) ?
          job._scheduled_at_time :
          job.scheduled_at
        time&.to_f
      end
    end
  end
end

# Every Active Job class may set `jiggler_options` (unique:, concurrency:, rate:), whatever adapter it runs on.
ActiveSupport.on_load(:active_job) { extend Jiggler::Rails::JobOptions }

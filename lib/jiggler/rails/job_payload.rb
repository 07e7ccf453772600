# frozen_string_literal: true

require_relative "../payload"
require_relative "../job_payload"
require_relative "../job/options"
require_relative "../unique_job"
require_relative "../limited_job"
require_relative "job_options"

module Jiggler
  module Rails
    # The jiggler payload of an Active Job job, as the adapter writes it: stored under the job's own class name and
    # serialized arguments, with Active Job's other fields beside them, run by the adapter's JobWrapper, and with the
    # "unique" and "limits" fields of its class's `jiggler_options` (see JobOptions).
    module JobPayload
      module_function

      # @parameter job [ActiveJob::Base]
      # @parameter at [Float | Nil] epoch seconds to run at, or nil for now.
      # @returns [Hash] the payload; its queue name and serialized arguments are checked as any jiggler job's.
      # @raises [ArgumentError] naming the problem.
      def build(job, at)
        data = job.serialize
        name = data.fetch("job_class")
        queue = job.queue_name.to_s
        Job::Options.check(:queue, queue)
        args = data.delete("arguments")
        Payload.check_args!(name, args)
        payload = Jiggler::JobPayload.job(
          args,
          Jiggler::JobPayload.fields(
            name: name,
            queue: queue,
            retries: 0,
            created_at: Time.now.to_f,
            wrapper: JobOptions::WRAPPER,
            active_job: data,
            at: at
          )
        )
        payload = retried(payload, job, $!) # the error being rescued, if any
        flow(payload, job)
      end

      # Marks a job Active Job enqueues again while it handles the job's own error (`retry_on`, or `retry_job` in a
      # rescue): its error and attempt are kept on the payload, so the dashboard's job page shows them on the
      # scheduled retry, and a later death counts its attempts on from there.
      # @returns [Hash] a new payload, or `payload` itself when there is no error to keep.
      def retried(payload, job, error)
        return payload unless error && job.executions.to_i.positive?
        Jiggler::JobPayload.changed(
          payload,
          error_class: error.class.name,
          error_message: error.message.to_s[0, 1000],
          attempt: job.executions,
          failed_at: Time.now.to_f
        )
      end

      # The options of the job's class for the client (unique: takes each job's lock as it is written), or nil.
      def client_options(job)
        options = options(job)
        options if options[:unique]
      end

      # The payload with the fields of the class's flow control. Keys are computed from the job's own arguments.
      # @returns [Hash] a new payload, or `payload` itself for a class without flow control.
      def flow(payload, job)
        options = options(job)
        return payload if options.empty?
        name = payload["name"]
        if options[:concurrency] || options[:rate]
          limits = LimitedJob.field(name, job.arguments, options)
        end
        if (unique = options[:unique])
          lock = UniqueJob.lock_key(
            name, unique[:key] ? job.arguments : payload["args"], unique
          )
          unique = {"lock" => lock, "until" => unique[:until].to_s}
        end
        Jiggler::JobPayload.changed(payload, limits: limits, unique: unique)
      end

      def options(job)
        job.class.respond_to?(:jiggler_options) ?
          job.class.jiggler_options :
          JobOptions::NONE
      end
    end
  end
end

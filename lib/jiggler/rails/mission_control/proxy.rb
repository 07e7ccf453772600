# frozen_string_literal: true

require "time"
require_relative "../../payload"
require_relative "location"

module Jiggler
  module Rails
    module MissionControl
      # Builds the job Mission Control shows, an ActiveJob::JobProxy, from a jiggler payload and its
      # Location. An Active Job job shows its own fields (the payload's "active_job"); a native
      # jiggler job shows its class name, jid, queue and arguments, its attempts as executions. A
      # failed job carries its error, message and backtrace; a scheduled one when it is due; a
      # running one its worker and start.
      module Proxy
        # Keeps a job's queue link working when its queue holds no job now (Mission Control lists
        # only the queues that hold jobs or are paused, and links every job to its queue).
        module QueueLink
          # The job's queue, even when it is empty.
          # @returns [ActiveJob::Queue]
          def queue
            super || ActiveJob::Queue.new(
              queue_name, queue_adapter: self.class.queue_adapter
            )
          end
        end

        module_function

        # @parameter location [Location]
        # @returns [ActiveJob::JobProxy | Nil] nil when the payload cannot be read.
        def build(location)
          job = Payload.load(location.payload)
          proxy = ActiveJob::JobProxy.new(job_data(job)).extend(QueueLink)
          describe(proxy, job, location)
          proxy
        rescue Payload::MalformedError
          nil
        end

        # Whether a payload is the job of `id`: its Active Job id or its jid.
        # @parameter payload [String] as stored.
        def id?(payload, id)
          job = Payload.load(payload)
          job["jid"] == id || active_job(job)["job_id"] == id
        rescue Payload::MalformedError
          false
        end

        # The fields Active Job deserializes a job from.
        def job_data(job)
          data = active_job(job).empty? ? native(job) : active_job(job)
          data.merge(
            # a page links each job by it: a payload without one still shows
            "job_id" => data["job_id"] || job["jid"],
            "arguments" => Array(job["args"]), "provider_job_id" => job["jid"],
            "executions" => data["executions"] || 0,
            # Pages show when a job was enqueued; a payload that never says reads as the epoch rather than failing.
            "enqueued_at" => data["enqueued_at"] ||
              iso8601(job["enqueued_at"] || job["created_at"]) ||
              iso8601(0)
          )
        end

        # A native jiggler job in Active Job's terms.
        def native(job)
          attempts = job["attempt"].is_a?(Integer) ? job["attempt"] : 0
          {
            "job_class" => job["name"],
            "job_id" => job["jid"],
            "queue_name" => job["queue"],
            "executions" => attempts
          }
        end

        def active_job(job)
          job["active_job"].is_a?(Hash) ? job["active_job"] : {}
        end

        def describe(proxy, job, location)
          proxy.status = location.status
          proxy.position = location
          proxy.raw_data = job
          proxy.filtered_raw_data = filtered(job)
          if location.place == :scheduled
            proxy.scheduled_at = time(location.score)
          end
          failure(proxy, job) if proxy.status == :failed
          proxy.worker_id = location.worker_id
          proxy.started_at = time(location.started_at)
        end

        def failure(proxy, job)
          # pages show it: the epoch when unknown
          proxy.failed_at = time(job["failed_at"] || job["died_at"]) || time(0)
          proxy.last_execution_error = ActiveJob::ExecutionError.new(
            error_class: job["error_class"], message: job["error_message"],
            backtrace: Array(job["error_backtrace"])
          )
        end

        # The payload with the arguments Mission Control's `filter_arguments` names filtered out.
        def filtered(job)
          return job unless job["args"].is_a?(Array)
          job.merge(
            "args" => ::MissionControl::Jobs.job_arguments_filter
              .apply_to(job["args"])
          )
        end

        def time(epoch)
          (Time.at(epoch).utc if epoch.is_a?(Numeric) && epoch.finite?)
        end

        def iso8601(epoch) = time(epoch)&.iso8601(6)
      end
    end
  end
end

# frozen_string_literal: true

require "rails"
# mission_control/jobs uses 1.minute without requiring it.
require "active_support/core_ext/integer/time"
require "mission_control/jobs"
require_relative "active_job_adapter"
require_relative "../set_actions"
require_relative "mission_control/listing"
require_relative "mission_control/proxy"
require_relative "mission_control/actions"
require_relative "mission_control/workers"

module Jiggler
  module Rails
    # Mission Control - Jobs on jiggler: the interface Mission Control expects of a queue adapter,
    # included in the jiggler adapter when the app has the `mission_control-jobs` gem (the Railtie
    # does it). It is written once against the store's admin reads and actions, so it works on every
    # store. Pending jobs are the queues', failed jobs the retry and dead sets' (with their errors),
    # scheduled jobs the scheduled set's, jobs in progress those the live processes run, and workers
    # the live processes. Jiggler keeps no finished jobs, and its blocked jobs (waiting for a
    # concurrency slot) are not readable one by one: neither status is shown.
    module MissionControl
      include ::MissionControl::Jobs::Adapter

      # The statuses whose jobs can be listed.
      LISTED_STATUSES = %i[pending failed scheduled in_progress].freeze

      # The queues that hold jobs, are paused, or that a live process works.
      # @returns [Array(Hash)] name, size and active (not paused), by name.
      def queues
        sizes = jobs_store.queue_sizes
        paused = jobs_store.paused_queues
        (sizes.keys.grep(String) | paused | worker_registry.queue_names)
          .sort
          .map do |name|
            {
              name: name,
              size: sizes.fetch(name, 0),
              active: !paused.include?(name)
            }
          end
      end

      # @returns [Integer] how many jobs wait in the queue.
      def queue_size(name) = jobs_store.queue_sizes.fetch(name, 0)

      # Deletes every job waiting in the queue.
      def clear_queue(name) = jobs_store.clear_queue(name)

      # Pauses the queue: servers fetch no job from it, pushes still land in it.
      def pause_queue(name) = jobs_store.pause_queue(name)

      # Resumes the queue, waking idle servers.
      def resume_queue(name) = jobs_store.resume_queue(name)

      # Whether servers skip the queue.
      def queue_paused?(name) = jobs_store.paused_queues.include?(name)

      # @returns [Array(Symbol)] pending, failed, scheduled and in_progress.
      def supported_job_statuses = LISTED_STATUSES

      # The filters applied by the store's reads (the others are applied by Mission Control, in
      # memory).
      # @parameter relation [ActiveJob::JobsRelation]
      def supported_job_filters(relation)
        relation.pending? ? [:queue_name] : []
      end

      # @returns [Integer] how many jobs the relation's status holds.
      def jobs_count(relation) = listing(relation).count

      # One page of the relation's jobs.
      # @parameter relation [ActiveJob::JobsRelation] its status, queue, worker, offset and limit.
      # @returns [Array(ActiveJob::JobProxy)]
      def fetch_jobs(relation)
        locations = listing(relation)
          .page(relation.offset_value, relation.limit_value)
        locations.filter_map { |location| Proxy.build(location) }
      end

      # Finds a job by its Active Job id (or, for a native jiggler job, its jid) among the
      # relation's status, or among every job for a relation without one. It reads the lists a chunk
      # at a time until it finds the job.
      # @returns [ActiveJob::JobProxy | Nil]
      def find_job(job_id, relation)
        location = listing(relation)
          .find { |payload| Proxy.id?(payload, job_id) }
        Proxy.build(location) if location
      end

      # Retries a failed job now, in its queue.
      # @raises [ActiveJob::Errors::JobNotFoundError] when it is no longer in its set.
      def retry_job(job, relation)
        found!(job, relation, job_actions.rerun([job]))
      end

      # Retries the relation's failed jobs now.
      # @returns [Integer] how many moved.
      def retry_all_jobs(relation) = job_actions.rerun(relation.to_a)

      # Deletes a job from its queue or set.
      # @raises [ActiveJob::Errors::JobNotFoundError] when it is no longer there.
      # @raises [ActiveJob::Errors::InvalidOperation] for a running job.
      def discard_job(job, relation)
        found!(job, relation, job_actions.discard([job]))
      end

      # Deletes the relation's jobs: every failed job, or a whole queue, at once when no filter
      # narrows them.
      def discard_all_jobs(relation)
        narrowed = relation.paginated? || relation.filtering_needed?
        if !narrowed && relation.failed?
          %i[retry dead].each do |set|
            SetActions.sweep(jobs_store, set, :delete)
          end
        elsif !narrowed && relation.pending? && relation.queue_name
          clear_queue(relation.queue_name)
        else
          job_actions.discard(relation.to_a)
        end
      end

      # Moves a scheduled job to its queue, to run now.
      # @raises [ActiveJob::Errors::JobNotFoundError] when it is no longer scheduled.
      def dispatch_job(job, relation)
        found!(job, relation, job_actions.rerun([job]))
      end

      # Workers are the live jiggler processes.
      def exposes_workers? = true

      # @returns [Array(Hash)] every live process as a worker.
      def workers = worker_registry.list

      # One page of workers.
      # @parameter relation [MissionControl::Jobs::WorkersRelation]
      # @returns [Array(MissionControl::Jobs::Worker)]
      def fetch_workers(relation)
        page = workers.drop(relation.offset_value).first(relation.limit_value)
        page.map do |worker|
          ::MissionControl::Jobs::Worker.new(queue_adapter: self, **worker)
        end
      end

      # @returns [Integer] how many processes are live.
      def count_workers(_relation) = workers.size

      # @returns [Hash | Nil] the worker of that id.
      def find_worker(id) = worker_registry.find(id)

      private

      # The store of the app's jiggler client (an entry point: Mission Control calls the adapter).
      def jobs_store = Jiggler.store

      def job_actions = MissionControl::Actions.new(jobs_store)

      def worker_registry = MissionControl::Workers.new(jobs_store)

      def listing(relation)
        running = -> { worker_registry.running(relation.worker_id) }
        MissionControl::Listing.for(jobs_store, relation.status,
          queue: relation.queue_name, running: running)
      end

      def found!(job, relation, moved)
        if moved.zero?
          raise ActiveJob::Errors::JobNotFoundError.new(job, relation)
        end
        moved
      end
    end
  end
end

ActiveJob::QueueAdapters::JigglerAdapter.include(Jiggler::Rails::MissionControl)

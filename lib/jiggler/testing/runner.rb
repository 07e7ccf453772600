# frozen_string_literal: true

require_relative "../job"

module Jiggler
  module Testing
    # Performs kept jobs in the test's own process, as a server would: through the server middleware, a wrapper class
    # given the whole payload, a batch class its items together, a workflow step with its dependencies' results.
    module Runner
      module_function

      # Performs one job; a workflow step's completion then releases its dependants (Workflows).
      # @parameter job [Hash] a payload Hash.
      # @returns [Object] what `perform` returned.
      def run(job)
        value = perform(job, job["wrapper"] ? [job] : job["args"])
        Workflows.completed(job, value) if job["workflow"]
        value
      end

      # Performs the jobs of one class in order, taking each off the list first, until the list is empty (jobs they
      # enqueue included). A batch class performs up to `batch_size` items per `perform_batch`.
      # @returns [Integer] how many jobs ran.
      def drain(name, list)
        size = Object.const_get(name).then do |klass|
          klass.respond_to?(:job_options) && klass.job_options[:batch_size]
        end
        ran = 0
        until list.empty?
          items = list.shift(size || 1)
          next unless due?(items.first)
          if size
            perform(
              items.first, [items.map { |job| job["args"] }], :perform_batch
            )
          else
            run(items.first)
          end
          ran += items.size
        end
        ran
      end

      # Whether a kept job is still to run: an Active Job job that Rails' test helpers ran (or cleared) is not.
      def due?(job)
        !(job["active_job"] && defined?(ActiveJobMirror)) ||
          ActiveJobMirror.take(job)
      end

      def perform(job, args, method = :perform)
        instance = Object.const_get(job["wrapper"] || job["name"]).new
        instance.jid = job["jid"]
        if job["workflow"] && job["after"]
          instance.workflow_step = -> { Workflows.results(job) }
        end
        if job["workflow"] && job["on_complete"]
          instance.workflow_members = -> { Workflows.outcome(job) }
        end
        middleware = Jiggler.config.server_middleware
        return instance.public_send(method, *args) if middleware.empty?
        middleware.invoke(instance, job, job["queue"]) do
          instance.public_send(method, *args)
        end
      end
    end
  end
end

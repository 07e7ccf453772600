# frozen_string_literal: true

require "active_support/notifications"

module Jiggler
  # Publishes jiggler's events through ActiveSupport::Notifications, each with the job's payload Hash as `:job`:
  #
  # - `enqueue.jiggler` around every enqueue (with `:queue`),
  # - `perform.jiggler` around every perform (with `:queue`),
  # - `retry.jiggler` for a failure that will be retried, and `death.jiggler` for a job sent to the dead set (both
  #   with `:error`).
  #
  # A Rails app gets them by default; elsewhere, `Jiggler::Instrumentation.install(Jiggler.config)`.
  module Instrumentation
    # Client middleware: `enqueue.jiggler`.
    class Enqueue
      # Publishes the event around the rest of the client chain.
      def call(job, queue, &block)
        ActiveSupport::Notifications.instrument(
          "enqueue.jiggler", job: job, queue: queue, &block
        )
      end
    end

    # Server middleware: `perform.jiggler`.
    class Perform
      # Publishes the event around the rest of the server chain.
      def call(_instance, job, queue, &block)
        ActiveSupport::Notifications.instrument(
          "perform.jiggler", job: job, queue: queue, &block
        )
      end
    end

    # An error handler: `retry.jiggler` for a failure that leaves the job retrying (a dead one is DeathEvent's).
    class RetryEvent
      # Publishes the event unless the job is dead.
      def call(error, context)
        job = context[:job]
        unless job.key?("died_at")
          ActiveSupport::Notifications.instrument(
            "retry.jiggler", job: job, error: error
          )
        end
      end
    end

    # A death handler: `death.jiggler`.
    class DeathEvent
      # Publishes the event.
      def call(job, error)
        ActiveSupport::Notifications.instrument(
          "death.jiggler", job: job, error: error
        )
      end
    end

    module_function

    # Adds the middleware and handlers that publish the events (once, however often it is called).
    # @parameter config [Config]
    def install(config)
      config.client_middleware { |chain| chain.add(Enqueue) }
      config.server_middleware { |chain| chain.add(Perform) }
      unless config[:error_handlers].any?(RetryEvent)
        config[:error_handlers] << RetryEvent.new
      end
      unless config[:death_handlers].any?(DeathEvent)
        config[:death_handlers] << DeathEvent.new
      end
    end
  end
end

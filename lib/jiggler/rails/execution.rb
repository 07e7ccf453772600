# frozen_string_literal: true

module Jiggler
  module Rails
    # The job wrapper of a Rails app (`config.job_wrapper`): each job runs inside the app's executor, or its reloader
    # where code reloads (as in development), from the lookup of its class on. Active Record connections go back to
    # the pool after each job, and edited code is reloaded between jobs, before the next job's class is looked up.
    class Execution
      # @parameter app [Rails::Application]
      def initialize(app)
        @wrapper = app.config.reloading_enabled? ? app.reloader : app.executor
      end

      # Runs a job inside the executor or reloader.
      def call(&block) = @wrapper.wrap(source: "jiggler", &block)
    end
  end
end

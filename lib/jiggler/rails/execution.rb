# frozen_string_literal: true

module Jiggler
  module Rails
    # Server middleware that runs each job inside the app's executor, or its reloader where code reloads (as in
    # development): Active Record connections go back to the pool after each job, and edited code is reloaded
    # between jobs. A failure is reported to `Rails.error` with the job's class, id and queue as context.
    class Execution
      # @parameter app [Rails::Application]
      def initialize(app)
        @wrapper = app.config.reloading_enabled? ? app.reloader : app.executor
      end

      def call(_instance, job, queue)
        @wrapper.wrap(source: "jiggler") do
          ::Rails.error.set_context(jiggler: {"class" => job["name"], "jid" => job["jid"], "queue" => queue})
          yield
        end
      end
    end
  end
end

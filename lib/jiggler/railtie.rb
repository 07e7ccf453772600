# frozen_string_literal: true

require "rails"
require_relative "../jiggler"
require_relative "rails/execution"
require_relative "rails/error_reporter"
require_relative "instrumentation"

module Jiggler
  # Loaded by `require "jiggler"` in a Rails app. It makes `queue_adapter = :jiggler` findable, runs every job in
  # the Rails executor (the reloader where code reloads; job classes are looked up again after a reload), reports
  # failures to `Rails.error`, sends jiggler's log to `Rails.logger`, and publishes Active Support notifications for
  # enqueue, perform, retry and death.
  class Railtie < ::Rails::Railtie
    # Registered now, before Active Job's own hook looks the adapter up by name.
    ActiveSupport.on_load(:active_job) { require "active_job/queue_adapters/jiggler_adapter" }

    initializer "jiggler.middleware" do |app|
      Jiggler.configure do |config|
        config.job_wrapper = Rails::Execution.new(app)
        config[:error_handlers] << Rails::ErrorReporter.new unless config[:error_handlers].any?(Rails::ErrorReporter)
        Instrumentation.install(config)
      end
    end

    config.after_initialize { Jiggler.logger = ::Rails.logger }

    # After each code reload (in development), servers look job classes up again.
    config.to_prepare { Jiggler::Job.reloaded! }
  end
end

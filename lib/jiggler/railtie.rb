# frozen_string_literal: true

require "rails"
require_relative "../jiggler"
require_relative "rails/execution"
require_relative "rails/error_reporter"
require_relative "instrumentation"

module Jiggler
  # Loaded by `require "jiggler"` in a Rails app. It makes `queue_adapter = :jiggler` findable, runs every job in
  # the Rails executor (the reloader where code reloads), reports failures to `Rails.error`, sends jiggler's log to
  # `Rails.logger`, and publishes Active Support notifications for enqueue, perform, retry and death.
  class Railtie < ::Rails::Railtie
    # Registered now, before Active Job's own hook looks the adapter up by name.
    ActiveSupport.on_load(:active_job) { require "active_job/queue_adapters/jiggler_adapter" }

    initializer "jiggler.middleware" do |app|
      Jiggler.configure do |config|
        config.server_middleware { |chain| chain.prepend(Rails::Execution, app) }
        config[:error_handlers] << Rails::ErrorReporter.new unless config[:error_handlers].any?(Rails::ErrorReporter)
        Instrumentation.install(config)
      end
    end

    config.after_initialize { Jiggler.logger = ::Rails.logger }
  end
end

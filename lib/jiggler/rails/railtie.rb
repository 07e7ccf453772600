# frozen_string_literal: true

require "rails"
require_relative "execution"
require_relative "error_reporter"
require_relative "../instrumentation"
require_relative "../logger"

module Jiggler
  # Loaded by `require "jiggler"` in a Rails app. It defines the Active Job adapter (`queue_adapter = :jiggler`), runs
  # every job in the Rails executor (the reloader where code reloads; job classes are looked up again after a
  # reload), reports failures to `Rails.error`, sends jiggler's log to `Rails.logger` (except in the JSON format), and
  # publishes Active Support notifications for enqueue, perform, retry and death.
  class Railtie < ::Rails::Railtie
    # Defined now, whatever the environment and eager loading: a server looks the adapter's JobWrapper up by name,
    # and a development server may run Active Job jobs before anything loads ActiveJob::Base (which this does not
    # load: its on_load hooks must wait for the app's settings).
    begin
      require "active_job"
    rescue LoadError
      nil # Active Job is not in the bundle: there is no adapter to define
    else
      require_relative "active_job_adapter"
    end

    initializer "jiggler.middleware" do |app|
      Jiggler.configure do |config|
        config.job_wrapper = Rails::Execution.new(app)
        unless config[:error_handlers].any?(Rails::ErrorReporter)
          config[:error_handlers] << Rails::ErrorReporter.new
        end
        Instrumentation.install(config)
      end
    end

    # Jiggler logs to Rails.logger, unless `log_format: json` (or JIGGLER_LOG_FORMAT=json) asks for its own JSON
    # lines on standard output.
    config.after_initialize do
      unless Jiggler.config[:log_format] == :json
        Jiggler.logger = ::Rails.logger
      end
    end

    # Mission Control - Jobs, when the app has it, reads and acts on jiggler's jobs through the adapter. Checked
    # once every gem is loaded, whatever the order of the Gemfile.
    config.before_initialize do
      if defined?(::MissionControl::Jobs::Engine)
        require_relative "mission_control"
      end
    end

    # After each code reload (in development), servers look job classes up again.
    config.to_prepare { Jiggler::Job.reloaded! }
  end
end

# frozen_string_literal: true

# A small Rails app for jiggler's Rails tests: Active Record on SQLite, Active Job on jiggler, the dashboard mounted.
require "rails"
require "active_record/railtie"
require "active_job/railtie"
require "action_controller/railtie"
require "jiggler"
require "propshaft"
require "mission_control/jobs" # test/rails/mission_control_test.rb

module Shop
  class Application < Rails::Application
    config.load_defaults Rails::VERSION::STRING.to_f
    config.root = File.expand_path("..", __dir__)
    config.eager_load = Rails.env.production?
    config.enable_reloading = Rails.env.development?
    config.secret_key_base = "a" * 64
    # APP_LOG=stdout logs to standard output, tagged, as a new app's production environment does.
    config.logger = if ENV["APP_LOG"] == "stdout"
      ActiveSupport::TaggedLogging.new(ActiveSupport::Logger.new($stdout))
    else
      ActiveSupport::Logger.new(ENV.fetch("APP_LOG", File::NULL))
    end
    config.log_level = :info
    config.active_job.queue_adapter = :jiggler
    # Jobs run on fibers: each must have its own connection (the server refuses to start otherwise).
    config.active_support.isolation_level =
      ENV.fetch("APP_ISOLATION_LEVEL", "fiber").to_sym
    # Mission Control - Jobs, mounted at /jobs: no authentication, and no ApplicationController in this app.
    config.mission_control.jobs.http_basic_auth_enabled = false
    config.mission_control.jobs.base_controller_class = "ActionController::Base"
    # The tests post Mission Control's forms without a CSRF token.
    config.action_controller.allow_forgery_protection = false
  end
end

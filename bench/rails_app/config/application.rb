# frozen_string_literal: true

# The smallest Rails app for bin/bench's activejob workload: Active Job on jiggler, no database, eager-loaded, the
# executor around every job as in any Rails app. BENCH_JOBS_FILE is the harness's jobs file (BenchDone, BenchNoopJob).
require "rails"
require "active_job/railtie"
require "action_controller/railtie" # eager loading loads Rails::HealthController
require "jiggler"

module BenchApp
  class Application < Rails::Application
    config.load_defaults Rails::VERSION::STRING.to_f
    config.root = File.expand_path("..", __dir__)
    config.eager_load = true
    config.enable_reloading = false
    config.secret_key_base = "b" * 64
    config.logger = ActiveSupport::Logger.new($stdout, level: :warn)
    config.log_level = :warn
    config.active_job.queue_adapter = :jiggler
    config.active_support.isolation_level = :fiber
  end
end

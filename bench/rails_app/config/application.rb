# frozen_string_literal: true

# The smallest Rails app for bin/bench's activejob workload: Active Job on jiggler (or on Sidekiq with
# BENCH_QUEUE_ADAPTER=sidekiq), no database, eager-loaded, the executor around every job as in any Rails app.
# BENCH_JOBS_FILE is the harness's jobs file (BenchDone, BenchNoopJob).
require "rails"
require "active_job/railtie"
# Eager loading loads Rails::HealthController.
require "action_controller/railtie"

BENCH_QUEUE_ADAPTER = ENV.fetch("BENCH_QUEUE_ADAPTER", "jiggler")
unless %w[jiggler sidekiq].include?(BENCH_QUEUE_ADAPTER)
  raise "BENCH_QUEUE_ADAPTER is jiggler or sidekiq, " \
    "not #{BENCH_QUEUE_ADAPTER.inspect}"
end
# "jiggler" or "sidekiq": each loads its railtie, and Sidekiq its own Active Job adapter
require BENCH_QUEUE_ADAPTER

module BenchApp
  class Application < Rails::Application
    config.load_defaults Rails::VERSION::STRING.to_f
    config.root = File.expand_path("..", __dir__)
    config.eager_load = true
    config.enable_reloading = false
    config.secret_key_base = "b" * 64
    config.logger = ActiveSupport::Logger.new($stdout, level: :warn)
    config.log_level = :warn
    config.active_job.queue_adapter = BENCH_QUEUE_ADAPTER.to_sym
    # Each as its docs set it: jiggler runs jobs on fibers (and checks this), Sidekiq on threads (Rails' default).
    config.active_support.isolation_level =
      (BENCH_QUEUE_ADAPTER == "jiggler") ? :fiber : :thread
  end
end

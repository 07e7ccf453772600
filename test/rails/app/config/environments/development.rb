# frozen_string_literal: true

# As a new Rails app's development environment has it: code reloads, nothing is eager-loaded.
Rails.application.configure do
  config.enable_reloading = true
  config.eager_load = false
  config.consider_all_requests_local = true
  config.server_timing = true
  config.active_support.deprecation = :log
  config.active_record.verbose_query_logs = true
  config.active_job.verbose_enqueue_logs = true
end

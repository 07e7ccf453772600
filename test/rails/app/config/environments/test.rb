# frozen_string_literal: true

# As a new Rails app's test environment has it: Active Job's test adapter, so ActiveJob::TestHelper works; with
# `require "jiggler/testing"`, jiggler's testing modes see the jobs enqueued through it too.
Rails.application.configure do
  config.eager_load = false
  config.active_job.queue_adapter = :test
end

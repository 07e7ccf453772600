# frozen_string_literal: true

# Boots test/rails/app in its test environment (Active Job's test adapter, as a new Rails app has it), on a fresh
# SQLite database, as an app's own test helper does: for the Minitest and RSpec files that use Rails' test helpers
# and jiggler's testing modes together. No server runs: nothing reaches a store.
require "tmpdir"

module TestEnvApp
  TMP = Dir.mktmpdir("jiggler-rails-test-env")

  def self.boot
    ENV.update(
      "RAILS_ENV" => "test",
      "APP_DATABASE" => File.join(TMP, "app.sqlite3"),
      "JIGGLER_SQLITE_PATH" => File.join(TMP, "jiggler.sqlite3")
    )
    ENV.delete("APP_EVENTS")
    require File.expand_path("app/config/environment", __dir__)
    ActiveRecord::Migration.verbose = false
    load File.expand_path("app/db/schema.rb", __dir__)
  end
end

TestEnvApp.boot

# frozen_string_literal: true

# A Rails app defined in the very file `jiggler -r` loads, as Rails' bug report templates and small services are:
# the server has loaded jiggler before that file loads Rails, so `require "jiggler"` there is a no-op, and the
# server must still give Rails the Active Job adapter. On SQLite, under each Rails version (`rake test:rails`).
require "minitest/autorun"
require "tmpdir"
require "jiggler"
require_relative "../support/server_process"
require_relative "../support/waiting"

ONE_FILE_APP = <<~RUBY
  require "rails"
  require "active_job/railtie"
  require "jiggler"

  class OneFileApp < Rails::Application
    config.eager_load = false
    config.logger = Logger.new(nil)
    config.active_job.queue_adapter = :jiggler
    config.active_support.isolation_level = :fiber
  end
  OneFileApp.initialize!

  class WriteJob < ActiveJob::Base
    def perform(path) = File.write(path, "ran in \#{Process.pid}")
  end

  WriteJob.perform_later(ENV.fetch("WRITE_TO")) if ENV["WRITE_TO"]
RUBY

describe "a one-file Rails #{Gem.loaded_specs["railties"].version} app " \
  "under jiggler -r" do
  include Waiting

  before do
    @dir = Dir.mktmpdir("jiggler-one-file")
    @app = File.join(@dir, "app.rb")
    File.write(@app, ONE_FILE_APP)
    @env = {
      "REDIS_URL" => nil,
      "JIGGLER_SQLITE_PATH" => File.join(@dir, "jobs.sqlite3")
    }
  end

  after do
    @server&.kill
    FileUtils.rm_rf(@dir)
  end

  it "finds the Active Job adapter and runs the app's job" do
    out = File.join(@dir, "out.txt")
    assert system(@env.merge("WRITE_TO" => out), RbConfig.ruby, @app),
      "the app could not enqueue"
    @server = ServerProcess.new(
      "-r", @app, namespace: "one-file", env: @env
    ).start
    wait_for(timeout: 30, message: "the job to run\n#{@server.log}") do
      File.exist?(out)
    end
    assert_equal "ran in #{@server.pid}", File.read(out)
  end
end

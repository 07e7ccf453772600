# frozen_string_literal: true

# Boots test/rails/app in this process, on a fresh SQLite database, with jiggler on the store JIGGLER_TEST_STORE
# names ("sqlite" or "redis"), and starts one `jiggler` server on it for all the tests of the run. With "postgres",
# the app's database and jiggler's store are the suite's private PostgreSQL, with `transactional_enqueue` on.
require "minitest/autorun"
require "tmpdir"
require "json"
require "securerandom"
require_relative "../support/redis_server"
require_relative "../support/server_process"
require_relative "../support/waiting"

module RailsApp
  DIR = File.expand_path("app", __dir__)
  TMP = Dir.mktmpdir("jiggler-rails")
  STORE = ENV.fetch("JIGGLER_TEST_STORE", "sqlite")
  NAMESPACE = "rails-#{SecureRandom.hex(4)}"
  CONCURRENCY = 50

  module_function

  # The environment the app and its jiggler servers share.
  def env
    @env ||= {
      "RAILS_ENV" => "production",
      "APP_DATABASE" => File.join(TMP, "app.sqlite3"),
      "APP_EVENTS" => File.join(TMP, "events.jsonl"),
      "JIGGLER_TEST_NAMESPACE" => NAMESPACE,
      "JIGGLER_SQLITE_PATH" => File.join(TMP, "jiggler.sqlite3"),
      "REDIS_URL" => (STORE == "redis") ? RedisServer.instance.url : nil
    }.merge((STORE == "postgres") ? postgres_env : {})
  end

  # PostgreSQL holds both the app's tables and jiggler's (in a schema named after the namespace), and jobs are written
  # on the app's connection (`transactional_enqueue`).
  def postgres_env
    require_relative "../support/postgres_server"
    url = PostgresServer.instance.url
    {
      "APP_DATABASE_URL" => url,
      "JIGGLER_DATABASE_URL" => url,
      "APP_TRANSACTIONAL_ENQUEUE" => "1"
    }
  end

  def boot
    env.each { |key, value| value ? ENV[key] = value : ENV.delete(key) }
    require File.join(DIR, "config", "environment")
    ActiveRecord::Migration.verbose = false
    load File.join(DIR, "db", "schema.rb")
  end

  # The shared server, started on first use (JSON log lines, so tests can read them).
  def server
    queues = %w[default bulk ledger probe-production]
      .flat_map { |queue| ["-q", queue] }
    @server ||= shared(start_server("-c", CONCURRENCY.to_s, *queues))
  end

  # The shared development server (no eager loading, code reloads), started on first use: it logs debug lines (-v),
  # in JSON, and the app logs to standard output as well.
  def development_server
    @development_server ||= shared(
      start_server(
        "-c", "5", "-v", "-q", "dev", "-q", "probe-development",
        env: {"RAILS_ENV" => "development", "APP_LOG" => "stdout"}
      )
    )
  end

  def shared(server)
    Minitest.after_run { server.kill }
    Waiting.wait_until(
      60, message: "the jiggler server to start:\n#{server.log}"
    ) { server.log.include?("started:") || !server.running? }
    unless server.running?
      raise "the jiggler server did not start:\n#{server.log}"
    end
    server
  end

  # Starts `jiggler -r test/rails/app` with extra flags and environment.
  def start_server(*args, env: {})
    ServerProcess.new(
      "-r", "test/rails/app", *args,
      namespace: NAMESPACE,
      env: self.env.merge("JIGGLER_LOG_FORMAT" => "json").merge(env)
    ).start
  end

  # The notifications and error reports the app recorded (config/initializers/jiggler.rb).
  def events
    File.exist?(env["APP_EVENTS"]) ?
      File.readlines(env["APP_EVENTS"]).map { |line| JSON.parse(line) } :
      []
  end
end

module Waiting
  # Polls outside a test (for shared setup), raising after `seconds`.
  def self.wait_until(seconds, message: "condition")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    until yield
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        raise "timed out after #{seconds} s waiting for #{message}"
      end
      sleep 0.05
    end
  end
end

RailsApp.boot

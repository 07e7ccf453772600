# frozen_string_literal: true

require "tmpdir"
require "fileutils"
require "jiggler/store/sqlite"
require_relative "store_target"

# What the flow-control tests share: a directory of the test's own, `jiggler` servers that load
# test/fixtures/flow_jobs.rb, the test's client pointed at an SQLite file there when a test runs on SQLite, and the
# servers' logs shown when a test fails. Include it in a block made by `StoreTarget.describe_each`, whose store
# `target_env` and `target_store` name, or in a plain `describe` block (Redis, unless a test calls `sqlite_env`).
module FlowServers
  FIXTURE = "./test/fixtures/flow_jobs.rb"

  def setup
    super
    @dir = Dir.mktmpdir("jiggler-flow")
    @record = File.join(@dir, "record.txt")
  end

  def teardown
    @servers.each(&:kill)
    @sqlite&.close
    FileUtils.rm_rf(@dir)
    super
  end

  # Points this test's client at an SQLite file of its own. @returns [Hash] the environment servers need to use it.
  def sqlite_env
    path = File.join(@dir, "jobs.sqlite3")
    @sqlite ||= Jiggler::Store::SQLite.new(path: path)
    Jiggler.client = Jiggler::Client.new(@sqlite)
    {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => path}
  end

  # The environment servers need to use the store of a block made by StoreTarget.describe_each, with this test's
  # client pointed at it. @returns [Hash]
  def target_env
    case target_name
    when "sqlite" then sqlite_env
    when "postgres" then postgres_env
    else {}
    end
  end

  # Points this test's client at the suite's PostgreSQL, in a schema named after the test's namespace.
  # @returns [Hash] the environment servers need to use it.
  def postgres_env
    target = StoreTarget::Postgres.new(@namespace)
    Jiggler.configure { |config| target.configure(config) }
    Jiggler.client = Jiggler::Client.new(Jiggler::Store.client(Jiggler.config))
    target.server_env
  end

  # The store this test's client writes to (the test's Redis namespace, or its SQLite file once `target_env` said so).
  def target_store = @sqlite || store

  # Starts a server on the fixture with `env` (the record file's path added) and command-line flags; waits for its
  # start line unless told not.
  def start_flow(env, *flags, wait: true)
    server = ServerProcess.new(
      "-r", FIXTURE, *flags,
      namespace: @namespace,
      env: {"FLOW_RECORD" => @record}.merge(env)
    ).start
    @servers << server
    return server unless wait
    wait_for(timeout: 20, message: "server #{server.pid} to start") do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, "the server did not start:\n#{server.log}"
    server
  end
end

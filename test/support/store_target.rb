# frozen_string_literal: true

require "tmpdir"
require "fileutils"

# The store a reliability test runs against, chosen as solid_queue chooses its database in CI (TARGET_DB): the
# environment variable JIGGLER_TEST_STORES lists the stores to test, all of them by default, so that one run tests
# them all; `JIGGLER_TEST_STORES=sqlite` runs the shared suites on SQLite alone, and
# `JIGGLER_TEST_STORES=postgres` on the suite's private PostgreSQL (support/postgres_server.rb).
#
# A suite written once with `StoreTarget.describe_each("title") { ... }` becomes one test class per store, named
# "title on redis", "title on sqlite" and "title on postgres". Servers choose their store as users' servers do:
# REDIS_URL set means Redis, JIGGLER_DATABASE_URL PostgreSQL, neither the SQLite file at JIGGLER_SQLITE_PATH.
module StoreTarget
  ALL = %w[redis sqlite postgres].freeze

  module_function

  # The stores to test. @returns [Array(String)]
  def names
    listed = ENV.fetch("JIGGLER_TEST_STORES", ALL.join(","))
      .split(",").map(&:strip)
    unknown = listed - ALL
    if unknown.any?
      raise ArgumentError, "JIGGLER_TEST_STORES: unknown store " \
        "#{unknown.join(", ")} (known: #{ALL.join(", ")})"
    end
    listed
  end

  # Defines one spec class per store, each running the block's specs with `target_name` returning its store.
  def describe_each(title, &specs)
    names.each do |name|
      describe("#{title} on #{name}") do
        define_method(:target_name) { name }
        class_eval(&specs)
      end
    end
  end

  # @parameter name [String] "redis", "sqlite" or "postgres".
  # @parameter namespace [String] the test's namespace (Redis; PostgreSQL's schema).
  # @parameter dir [String] a directory of the test's own (SQLite puts its file there).
  def build(name, namespace:, dir:)
    case name
    when "redis" then Redis.new(namespace)
    when "postgres" then Postgres.new(namespace)
    else SQLite.new(File.join(dir, "jobs.sqlite3"))
    end
  end

  # The suite's shared redis-server, in the test's namespace.
  class Redis
    def initialize(namespace)
      @namespace = namespace
    end

    def name = "redis"

    # What a server process needs in its environment to use this store.
    def server_env = {"REDIS_URL" => RedisServer.instance.url}

    # Points a config (the test process's) at this store.
    def configure(config)
      config[:redis_url] = RedisServer.instance.url
      config[:namespace] = @namespace
    end

    # Puts a payload in the retry or scheduled set as it is, unchecked, as a bug or a hand-made edit might.
    def plant(store, set, score, payload)
      redis do |client|
        client.call("ZADD", store.keys.public_send(set), score, payload)
      end
    end

    # Every job payload the store holds and where, read in one atomic step (a Lua script runs alone).
    # @returns [Array([String, String])] place ("queue", "in_flight", "scheduled", "retry" or "dead") and payload.
    def places(store)
      redis do |client|
        client.call("EVAL", PLACES, 0, "{#{store.keys.namespace}}:")
      end
    end

    # Every start the rate limits hold now (a start is kept for its period): member ("jid:time") => time.
    # @returns [Hash(String, Float)]
    def rate_starts(store)
      redis do |client|
        client.call("KEYS", store.keys.limit("starts", "*"))
          .flat_map do |key|
            client.call("ZRANGE", key, 0, -1, "WITHSCORES")
              .flatten.each_slice(2).to_a
          end
          .to_h { |member, at| [member, Float(at)] }
      end
    end

    def close = @redis&.close

    PLACES = <<~LUA
      local prefix = ARGV[1]
      local places = {}
      for _, key in ipairs(redis.call("KEYS", prefix .. "queue:*")) do
        for _, payload in ipairs(redis.call("LRANGE", key, 0, -1)) do table.insert(places, {"queue", payload}) end
      end
      for _, key in ipairs(redis.call("KEYS", prefix .. "in_flight:*")) do
        for _, payload in ipairs(redis.call("HVALS", key)) do table.insert(places, {"in_flight", payload}) end
      end
      for _, set in ipairs({"scheduled", "retry", "dead"}) do
        for _, payload in ipairs(redis.call("ZRANGE", prefix .. set, 0, -1)) do table.insert(places, {set, payload}) end
      end
      return places
    LUA

    private

    def redis = yield(@redis ||= RedisClient.new(url: RedisServer.instance.url))
  end

  # A fresh SQLite file of the test's own.
  class SQLite
    PLACES = {
      "queued" => "queue",
      "in_flight" => "in_flight",
      "scheduled" => "scheduled",
      "retry" => "retry",
      "dead" => "dead"
    }.freeze

    attr_reader :path

    def initialize(path)
      @path = path
    end

    def name = "sqlite"

    # REDIS_URL unset (a nil value unsets it in Process.spawn), so the server opens JIGGLER_SQLITE_PATH.
    def server_env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path}

    def configure(config)
      config[:redis_url] = nil
      config[:sqlite_path] = @path
    end

    def plant(store, set, score, payload)
      store.with do |db|
        db.execute(
          "INSERT INTO jobs (state, queue, run_at, payload) " \
          "VALUES (?, 'default', ?, ?)",
          [set.to_s, score, payload]
        )
      end
    end

    # One SELECT: a consistent snapshot in WAL mode.
    def places(store)
      store.with do |db|
        db.execute(
          "SELECT state, payload FROM jobs " \
          "WHERE state IN (#{(["?"] * PLACES.size).join(", ")})",
          PLACES.keys
        )
      end.map { |state, payload| [PLACES.fetch(state), payload] }
    end

    def rate_starts(store)
      store.with { |db| db.execute("SELECT member, at FROM rate_starts").to_h }
    end

    def close = nil
  end

  # The suite's private PostgreSQL, in a schema named after the test's namespace. Servers keep REDIS_URL unset, as
  # on SQLite, so nothing but JIGGLER_DATABASE_URL can choose their store.
  class Postgres
    PLACES = SQLite::PLACES

    def initialize(namespace)
      require_relative "postgres_server"
      @namespace = namespace
    end

    def name = "postgres"

    def server_env
      {
        "REDIS_URL" => nil,
        "JIGGLER_DATABASE_URL" => PostgresServer.instance.url
      }
    end

    def configure(config)
      config[:redis_url] = nil
      config[:database_url] = PostgresServer.instance.url
      config[:namespace] = @namespace
    end

    def plant(store, set, score, payload)
      store.with do |db|
        db.exec_params(
          "INSERT INTO #{schema}.jobs (state, queue, run_at, payload) " \
          "VALUES ($1, 'default', $2, $3)",
          [set.to_s, score.to_s, "\\x#{payload.unpack1("H*")}"]
        )
      end
    end

    # One SELECT: one snapshot.
    def places(store)
      rows = store.with do |db|
        result = db.exec_params(
          "SELECT state, payload FROM #{schema}.jobs " \
          "WHERE state = ANY($1::text[])",
          [PG::TextEncoder::Array.new.encode(PLACES.keys)]
        )
        # payloads are bytea
        result.type_map = Jiggler::Store::Postgres::Connection::RESULTS
        result.values
      end
      rows.map { |state, payload| [PLACES.fetch(state), payload] }
    end

    def rate_starts(store)
      store.with do |db|
        db.exec("SELECT member, at FROM #{schema}.rate_starts").values
          .to_h { |member, at| [member, Float(at)] }
      end
    end

    def close = nil

    private

    def schema = PG::Connection.quote_ident(@namespace)
  end
end

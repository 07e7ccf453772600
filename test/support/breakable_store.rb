# frozen_string_literal: true

require "fileutils"
require "tmpdir"
require "jiggler"
require "jiggler/store/sqlite"

# A store a loop under test works on, which the test can make unreachable (`break!`) and bring back (`repair!`): on
# Redis, a redis-server of its own stopped and started again on its port (empty: no test here needs its data back); on
# SQLite, a file whose directory is moved away and a plain file put in its place, so that opening it fails (a directory
# would be created again), then put back. The SQLite store holds its file open once it has it, so `break!` also closes
# the store.
module BreakableStore
  # @parameter name [String] "redis", "sqlite" or "postgres".
  # @parameter namespace [String] for Redis (and PostgreSQL's schema).
  # @parameter dir [String] a directory of the test's own, for SQLite.
  def self.build(name, namespace:, dir:)
    case name
    when "redis" then Redis.new(namespace)
    when "postgres" then Postgres.new(namespace)
    else SQLite.new(dir)
    end
  end

  class Redis
    def initialize(namespace)
      @server = RedisServer.new.start
      @config = Jiggler::Config.new.tap do |config|
        config[:redis_url] = @server.url
        config[:namespace] = namespace
      end
      @stores = []
    end

    # A new store on a connection of its own (closed by `stop`).
    def store
      Jiggler::Store.dedicated(@config).tap { |store| @stores << store }
    end

    def break! = @server.shutdown

    def repair! = @server.start

    def stop
      @stores.each(&:close)
      @server.stop
    end
  end

  class SQLite
    def initialize(dir)
      @dir = File.join(dir, "breakable")
      @path = File.join(@dir, "jobs.sqlite3")
      @stores = []
    end

    def store
      Jiggler::Store::SQLite.new(path: @path).tap { |store| @stores << store }
    end

    def break!
      @stores.each(&:close)
      FileUtils.mkdir_p(@dir)
      File.rename(@dir, "#{@dir}.away")
      File.write(@dir, "not a directory\n")
    end

    def repair!
      File.delete(@dir)
      File.rename("#{@dir}.away", @dir)
    end

    def stop = @stores.each(&:close)
  end

  # On PostgreSQL, a database of its own in the suite's cluster: `break!` refuses new connections to it and ends
  # those open (as a restart would), `repair!` lets them in again.
  class Postgres
    def initialize(namespace)
      require_relative "postgres_server"
      @database = "breakable_#{namespace.delete("^a-z0-9")}"
      admin { |db| db.exec("CREATE DATABASE #{@database}") }
      @config = Jiggler::Config.new.tap do |config|
        config[:redis_url] = nil
        config[:database_url] =
          PostgresServer.instance.url.sub(%r{/[^/]+\z}, "/#{@database}")
        config[:namespace] = namespace
      end
      @stores = []
    end

    def store
      Jiggler::Store.dedicated(@config).tap { |store| @stores << store }
    end

    def break!
      admin do |db|
        db.exec("ALTER DATABASE #{@database} ALLOW_CONNECTIONS false")
        db.exec(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity " \
          "WHERE datname = '#{@database}'"
        )
      end
    end

    def repair!
      admin do |db|
        db.exec("ALTER DATABASE #{@database} ALLOW_CONNECTIONS true")
      end
    end

    def stop
      @stores.each(&:close)
      repair!
      admin do |db|
        db.exec("DROP DATABASE IF EXISTS #{@database} WITH (FORCE)")
      end
    end

    private

    def admin(&block) = PG.connect(PostgresServer.instance.url, &block)
  end
end

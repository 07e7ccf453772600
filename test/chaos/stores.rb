# frozen_string_literal: true

require "json"
require "fileutils"
require "tmpdir"
require_relative "chaos"

module Chaos
  # Redis for the chaos: a redis-server of the run's own with an append-only file (fsync always, so a restart keeps
  # every write); its faults cut every connection, stall Redis and restart it.
  class RedisStore
    ACTIONS = %i[kill client_kill stall redis_restart].freeze
    # What the chaos picks from once its plan (each action twice) is done.
    SAMPLED = ACTIONS

    attr_reader :outages

    def initialize(namespace)
      @namespace = namespace
      @redis = RedisServer.new(appendonly: true).start
      @control = RedisClient.new(
        url: @redis.url,
        connect_timeout: 1,
        read_timeout: 5,
        write_timeout: 5
      )
      @keys = Jiggler::Store::Redis::Keys.new(namespace)
      @outages = [] # [from, to] while Redis was stalled or down
      @connections_cut = 0
      @stall = debug_allowed? ? "DEBUG SLEEP" : "CLIENT PAUSE ALL"
    end

    def server_env = {"REDIS_URL" => @redis.url}

    def configure(config) = config[:redis_url] = @redis.url

    # Answers the recovery watch, on a connection of its own.
    def probe = Probe.new(@redis.url, @keys)

    def act(action)
      case action
      when :client_kill then cut_connections
      when :stall then stall
      when :redis_restart then restart
      end
    end

    # How many jobs are queued, in flight in any of these processes, retrying, scheduled or dead, read in one atomic
    # step.
    def jobs_anywhere(processes)
      replies = retrying do
        @control.multi do |transaction|
          processes.each { |id| transaction.call("HLEN", @keys.in_flight(id)) }
          transaction.call("LLEN", @keys.queue("default"))
          %i[retry scheduled dead].each do |set|
            transaction.call("ZCARD", @keys.public_send(set))
          end
        end
      end
      replies.sum
    end

    # The process ids in the registry, live or dead.
    def registered = call("ZRANGE", @keys.processes, 0, -1)

    def report
      "stall by #{@stall} #{STALL} s; #{@connections_cut} connections cut"
    end

    # Where the jobs that never ran are. @returns [Array(String)] lines.
    def diagnose(missing, processes)
      queued = call("LRANGE", @keys.queue("default"), 0, -1).map do |payload|
        JSON.parse(payload)["args"].first
      end
      registry = call("ZRANGE", @keys.processes, 0, -1, "WITHSCORES").to_h
      lines = ["queued among them: #{queued & missing}"]
      processes.each do |pid, id|
        held = call("HGETALL", @keys.in_flight(id)).values.map do |payload|
          JSON.parse(payload)["args"].first
        end
        lines << "pid #{pid}: registered #{registry.key?(id)}, " \
          "registration ttl #{call("PTTL", @keys.process(id))} ms, " \
          "in flight #{held.size}, of them never ran: #{held & missing}"
      end
      lines
    end

    # Stops Redis; after a failure, keeps its append-only file (the whole history) in `evidence`.
    def stop(evidence: nil)
      @control.close
      if evidence
        FileUtils.cp_r(File.join(@redis.dir, "appendonlydir"), evidence)
      end
      @redis.stop
    end

    private

    # Cuts every client connection: the servers' pools, heartbeats and push subscriptions (the chaos's own is spared).
    def cut_connections
      @connections_cut += %w[normal pubsub].sum do |type|
        call("CLIENT", "KILL", "TYPE", type)
      end
    end

    # Redis answers nothing for STALL seconds.
    def stall
      from = Chaos.now
      if @stall == "DEBUG SLEEP"
        call("DEBUG", "SLEEP", STALL.to_s)
      else
        call("CLIENT", "PAUSE", (STALL * 1000).to_i.to_s, "ALL")
        sleep STALL
      end
      @outages << [from, Chaos.now]
    end

    # Stops and starts Redis on the same port; the append-only file (fsync always) keeps every write.
    def restart
      from = Chaos.now
      @redis.restart
      # refused with LOADING until the append-only file is read
      call("EXISTS", @keys.processes)
      @outages << [from, Chaos.now]
    end

    # Redis 7 refuses DEBUG unless started with enable-debug-command; then the stall is a CLIENT PAUSE ALL instead.
    def debug_allowed?
      call("DEBUG", "SLEEP", "0")
      true
    rescue RedisClient::CommandError
      false
    end

    # Runs a block until it does not fail for Redis being restarted (refused connection, LOADING), or `timeout` passes.
    def retrying(timeout: 10)
      deadline = Chaos.now + timeout
      begin
        yield
      rescue RedisClient::ConnectionError, RedisClient::CommandError => error
        if Chaos.now > deadline ||
            (error.is_a?(RedisClient::CommandError) &&
              !error.message.start_with?("LOADING"))
          raise
        end
        sleep 0.05
        retry
      end
    end

    def call(*command) = retrying { @control.call(*command) }

    # The recovery watch's view of Redis.
    class Probe
      def initialize(url, keys)
        @redis = RedisClient.new(
          url: url,
          connect_timeout: 0.5,
          read_timeout: 3,
          write_timeout: 1
        )
        @keys = keys
      end

      # @returns [Array(Integer, Boolean)] jobs the process holds in flight, and whether it is in the registry.
      def look(process)
        held, score = @redis.pipelined do |pipeline|
          pipeline.call("HLEN", @keys.in_flight(process))
          pipeline.call("ZSCORE", @keys.processes, process)
        end
        [held, !score.nil?]
      end

      def close = @redis.close
    end
  end

  # An SQLite file of the run's own; its fault is another connection holding the write lock, as a long transaction of
  # another application would: for STALL seconds (every write of every server waits meanwhile), or for LONG_LOCK
  # seconds, longer than a writer waits (SQLiteFile::LOCK_TIMEOUT) and than the registration TTL (every write fails
  # for a while and every registration expires, as with Redis down).
  class SQLiteStore
    ACTIONS = %i[kill lock long_lock].freeze
    # The long lock (6 s) happens twice, as planned, and no more: the run stays about a minute.
    SAMPLED = %i[kill lock].freeze
    LONG_LOCK = 6
    LIVE = "state IN ('queued', 'in_flight', 'scheduled', 'retry', 'dead')"

    attr_reader :outages

    def initialize(_namespace)
      @dir = Dir.mktmpdir("jiggler-chaos-sqlite")
      @path = File.join(@dir, "jobs.sqlite3")
      @control = Jiggler::Store::SQLite.new(path: @path)
      @outages = []
      @locks = []
    end

    def server_env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path}

    def configure(config)
      config[:redis_url] = nil
      config[:sqlite_path] = @path
    end

    def probe = Probe.new(@path)

    def act(action)
      case action
      when :lock then lock(STALL)
      when :long_lock then lock(LONG_LOCK)
      end
    end

    # One SELECT: a consistent snapshot in WAL mode.
    def jobs_anywhere(_processes)
      sql("SELECT count(*) FROM jobs WHERE #{LIVE}").flatten.first
    end

    def registered = sql("SELECT id FROM processes").flatten

    def report
      "write lock held #{@locks.map { |seconds| "#{seconds} s" }.join(", ")}"
    end

    def diagnose(missing, processes)
      rows = sql("SELECT state, owner, payload FROM jobs WHERE #{LIVE}")
      lost = rows.select do |_, _, payload|
        missing.include?(JSON.parse(payload)["args"].first)
      end
      owners = processes.to_h { |pid, id| [id, pid] }
      [
        "never ran, by place: " \
          "#{lost.map { |state, owner, _| [state, owners[owner]] }.tally}",
        "registry (seconds left): #{
          sql("SELECT id, expires_at FROM processes").map do |id, at|
            [id, (at - Time.now.to_f).round(1)]
          end
        }"
      ]
    end

    def stop(evidence: nil)
      @control.close
      FileUtils.cp(Dir[File.join(@dir, "jobs.sqlite3*")], evidence) if evidence
      FileUtils.rm_rf(@dir)
    end

    private

    def sql(query) = @control.with { |db| db.execute(query) }

    def lock(seconds)
      locker = SQLite3::Database.new(@path)
      # wait for a server's transaction to end before taking the lock
      locker.busy_timeout = 5_000
      locker.execute("BEGIN IMMEDIATE")
      from = Chaos.now
      sleep seconds # holding the lock is the fault
      locker.execute("COMMIT")
      @outages << [from, Chaos.now]
      @locks << seconds
    ensure
      locker&.close
    end

    # The recovery watch's view of the file, on a connection of its own; reads only, so it never waits for a lock.
    class Probe
      def initialize(path)
        @store = Jiggler::Store::SQLite.new(path: path)
      end

      def look(process)
        @store.with do |db|
          held = db.get_first_value(
            "SELECT count(*) FROM jobs " \
              "WHERE owner = ? AND state = 'in_flight'",
            [process]
          )
          [held, !db.get_first_value(
            "SELECT 1 FROM processes WHERE id = ?", [process]
          ).nil?]
        end
      end

      def close = @store.close
    end
  end

  # A schema of the suite's PostgreSQL, named after the run's namespace; its faults are every jiggler connection
  # terminated by the server (pg_terminate_backend, as a failover or an administrator does), and another session
  # holding the jobs table locked against writes for STALL seconds, as a migration or a long write would: every fetch,
  # acknowledgement and push waits meanwhile (lock_timeout is 10 s).
  class PostgresStore
    ACTIONS = %i[kill terminate lock].freeze
    SAMPLED = ACTIONS
    LIVE = SQLiteStore::LIVE

    attr_reader :outages

    def initialize(namespace)
      require "pg"
      require_relative "../support/postgres_server"
      @url = PostgresServer.instance.url
      @schema = PG::Connection.quote_ident(namespace)
      @namespace = namespace
      @control = PG.connect(@url, application_name: "jiggler-chaos")
      @outages = []
      @terminated = 0
      @locks = 0
    end

    def server_env = {"REDIS_URL" => nil, "JIGGLER_DATABASE_URL" => @url}

    def configure(config)
      config[:redis_url] = nil
      config[:database_url] = @url
      config[:namespace] = @namespace
    end

    def probe = Probe.new(@url, @schema)

    def act(action)
      case action
      when :terminate then terminate
      when :lock then lock
      end
    end

    # One SELECT: one snapshot.
    def jobs_anywhere(_processes)
      sql("SELECT count(*) FROM #{@schema}.jobs WHERE #{LIVE}")
        .first.first.to_i
    end

    def registered = sql("SELECT id FROM #{@schema}.processes").flatten

    def report
      "#{@terminated} connections terminated; " \
        "jobs table locked #{@locks} times for #{STALL} s"
    end

    def diagnose(missing, processes)
      rows = sql("SELECT state, owner, convert_from(payload, 'UTF8') " \
        "FROM #{@schema}.jobs WHERE #{LIVE}")
      lost = rows.select do |_, _, payload|
        missing.include?(JSON.parse(payload)["args"].first)
      end
      owners = processes.to_h { |pid, id| [id, pid] }
      [
        "never ran, by place: " \
          "#{lost.map { |state, owner, _| [state, owners[owner]] }.tally}",
        "registry: #{registered}"
      ]
    end

    def stop(evidence: nil)
      if evidence
        rows = sql(
          "SELECT id, state, owner, run_at FROM #{@schema}.jobs ORDER BY id"
        )
        File.write(
          File.join(evidence, "jobs.txt"),
          rows.map { |row| row.join(" ") }.join("\n")
        )
      end
      @control.close
      PostgresServer.instance.drop_schema(@namespace)
    end

    private

    def sql(query) = @control.exec(query).values

    # Ends every connection of the servers and of the test's client (not this one): what a failover does to them.
    def terminate
      @terminated += sql(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity " \
          "WHERE datname = current_database() AND pid <> pg_backend_pid() " \
          "AND application_name = 'jiggler'"
      ).size
    end

    def lock
      @control.transaction do |db|
        # reads go on; writes wait
        db.exec("LOCK TABLE #{@schema}.jobs IN EXCLUSIVE MODE")
        from = Chaos.now
        sleep STALL
        @outages << [from, Chaos.now]
      end
      @locks += 1
    end

    # The recovery watch's view of the schema, on a connection of its own.
    class Probe
      def initialize(url, schema)
        @db = PG.connect(url, application_name: "jiggler-chaos")
        @schema = schema
      end

      def look(process)
        held, registered = @db.exec_params(
          "SELECT (SELECT count(*) FROM #{@schema}.jobs " \
            "WHERE owner = $1 AND state = 'in_flight'), " \
            "EXISTS (SELECT 1 FROM #{@schema}.processes WHERE id = $1)",
          [process]
        ).values.first
        [held.to_i, registered == "t"]
      end

      def close = @db.close
    end
  end

  STORES = {
    "redis" => RedisStore,
    "sqlite" => SQLiteStore,
    "postgres" => PostgresStore
  }.freeze
end

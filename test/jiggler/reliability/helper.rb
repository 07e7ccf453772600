# frozen_string_literal: true

require "test_helper"
require "json"
require "etc"
require "set"
require "tmpdir"
require "fileutils"
require "support/store_target"
require_relative "../../fixtures/reliability_jobs"

# What the reliability tests share: servers that load test/fixtures/reliability_jobs.rb on the test's store (Redis, or
# an SQLite file of the test's own: see StoreTarget), the record the jobs write, private Redis servers for the tests
# that break Redis, and readers for what the store and the processes report. Include it in a `describe` block; a
# block made by `StoreTarget.describe_each` names its store, any other runs on Redis.
module ReliabilityHelper
  FIXTURE = "./test/fixtures/reliability_jobs.rb"
  CLOCK_TICKS = Etc.sysconf(Etc::SC_CLK_TCK)

  def target_name = "redis"

  def setup
    super
    @own_redis_servers = []
    @dir = Dir.mktmpdir("jiggler-reliability")
    @record = File.join(@dir, "record.txt")
    @target = StoreTarget.build(target_name, namespace: @namespace, dir: @dir)
    Jiggler.configure { |config| @target.configure(config) }
  end

  def teardown
    unless passed?
      @servers.each do |server|
        warn("--- server #{server.pid} " \
          "(#{server.running? ? "running" : "exited"}) log:\n#{server.log}")
      end
      warn("--- record:\n#{File.read(@record)}") if File.exist?(@record)
    end
    @servers.each(&:kill) # before their Redis goes away
    @own_redis_servers.each(&:stop)
    reset_client # closes the test's connection to the store
    @target.close
    FileUtils.rm_rf(@dir)
    super
  end

  def sqlite? = @target.name == "sqlite"

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Starts `exe/jiggler -r test/fixtures/reliability_jobs.rb` with flags, on the test's store.
  # @parameter redis_url [String | Nil] a Redis of the test's own to work on.
  # @parameter recovery_timeout [Numeric | Nil] config[:recovery_timeout] of the server.
  def start_reliable(
    *flags, env: {}, redis_url: nil, recovery_timeout: nil, wait: true
  )
    env = @target.server_env
      .merge("JIGGLER_TEST_RECORD_FILE" => @record)
      .merge(env)
    if recovery_timeout
      env["JIGGLER_TEST_RECOVERY_TIMEOUT"] = recovery_timeout.to_s
    end
    env["REDIS_URL"] = redis_url if redis_url
    server = ServerProcess.new(
      "-r", FIXTURE, *flags, namespace: @namespace, env: env
    ).start
    @servers << server
    wait_until_started(server) if wait
    server
  end

  def wait_until_started(server, timeout: 15)
    wait_for(
      timeout: timeout,
      message: "server #{server.pid} to start\n#{server.log}"
    ) do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, "the server did not start:\n#{server.log}"
  end

  # The server's id in the process registry, from its start line.
  def server_id(server) = server.log[/ started: (\S+),/, 1]

  # The payloads a server holds in flight.
  def held_by(server) = store.in_flight(server_id(server)).map(&:payload)

  # The parsed jobs a server holds in flight.
  def held_jobs(server) = held_by(server).map { |payload| JSON.parse(payload) }

  # Takes up to `limit` jobs from a queue into flight for `process`, as that process's fetcher would.
  def hold(process, queue, limit) = store.fetch(process, [queue], limit: limit)

  # Registers `process` with a registration that expires at once: to the reapers, a process that died.
  def register_dead(process)
    store.beat(process, "{}", 0.001)
    wait_for(message: "#{process}'s registration to expire") do
      store.dead_processes.include?(process)
    end
  end

  # A redis-server of this test's own (with an append-only file, so that it can be restarted with its data), and the
  # test's client pointed at it.
  def start_own_redis(appendonly: true)
    server = RedisServer.new(appendonly: appendonly).start
    @own_redis_servers << server
    Jiggler.configure { |config| config[:redis_url] = server.url }
    server
  end

  # A fresh client pool (after connections were cut, the old ones fail once each).
  def reset_client = Jiggler.configure { |_config| nil }

  # CPU seconds (user + system) a process has used, from /proc/<pid>/stat.
  def cpu_seconds(pid)
    fields = File.read("/proc/#{pid}/stat").rpartition(")").last.split
    (fields[11].to_i + fields[12].to_i) / CLOCK_TICKS.to_f
  end

  # Calls per command since the last CONFIG RESETSTAT, from INFO commandstats.
  # @returns [Hash(String, Integer)] e.g. {"evalsha" => 12, "zrange" => 3}
  def command_calls(client)
    client.call("INFO", "commandstats").lines
      .each_with_object({}) do |line, calls|
      name, count = line.match(/\Acmdstat_([^:]+):calls=(\d+)/)&.captures
      calls[name] = count.to_i if name
    end
  end

  # Asserts no command that walks the keyspace was run since the last CONFIG RESETSTAT.
  def refute_keyspace_walk(client)
    calls = command_calls(client)
    walks = calls.slice("scan", "keys", "randomkey", "flushdb", "flushall")
    assert_empty walks,
      "no command may walk or flush the keyspace; " \
        "commands run: #{calls.inspect}"
  end

  # Parsed payloads of the retry or dead set.
  def set_jobs(set)
    store.set_entries(set, limit: 100_000)
      .map { |payload, _score| JSON.parse(payload) }
  end

  # The record's lines as [value, pid, epoch seconds].
  def records
    return [] unless File.exist?(@record)
    File.readlines(@record).map do |line|
      line.split.then { |value, pid, at| [value, pid.to_i, at.to_f] }
    end
  end

  # The values the jobs recorded, in order.
  def recorded = records.map(&:first)

  # How many times the record holds this entry.
  def recorded_count(entry) = recorded.count(entry)

  # The pids that recorded this entry, in order.
  def recorded_by(entry)
    records.filter_map { |value, pid, _| pid if value == entry }
  end

  # The epoch time a job recorded `entry`, waiting for it.
  def recorded_at(entry, timeout: 10)
    wait_for(timeout: timeout, message: "#{entry} in the record") do
      records.find { |value, _, _| value == entry }&.last
    end
  end

  # The types of a job's history events (SQLite keeps each job's history).
  def history_types(jid) = store.history(jid).map { |_, event| event["type"] }

  # Lines of a server's log that match a pattern.
  def log_lines(server, pattern) = server.log.lines.grep(pattern)
end

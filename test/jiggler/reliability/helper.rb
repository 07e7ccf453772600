# frozen_string_literal: true

require "test_helper"
require "json"
require "etc"
require "set"
require_relative "../../fixtures/reliability_jobs"

# What the reliability tests share: servers that load test/fixtures/reliability_jobs.rb, private Redis servers for the
# tests that break Redis, and readers for what Redis and the processes report. Include it in a `describe` block.
module ReliabilityHelper
  FIXTURE = "./test/fixtures/reliability_jobs.rb"
  CLOCK_TICKS = Etc.sysconf(Etc::SC_CLK_TCK)

  def setup
    super
    @own_redis_servers = []
  end

  def teardown
    unless passed?
      @servers.each { |server| warn("--- server #{server.pid} (#{server.running? ? "running" : "exited"}) log:\n#{server.log}") }
    end
    @servers.each(&:kill) # before their Redis goes away
    @own_redis_servers.each(&:stop)
    super
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Starts `exe/jiggler -r test/fixtures/reliability_jobs.rb` with flags, in this test's namespace.
  # @parameter redis_url [String | Nil] the Redis the server works on (the record stays on the shared one).
  # @parameter recovery_timeout [Numeric | Nil] config[:recovery_timeout] of the server.
  def start_reliable(*flags, env: {}, redis_url: nil, recovery_timeout: nil, wait: true)
    env = env.dup
    env["JIGGLER_TEST_RECOVERY_TIMEOUT"] = recovery_timeout.to_s if recovery_timeout
    if redis_url
      env["REDIS_URL"] = redis_url
      env["JIGGLER_TEST_RECORD_URL"] = RedisServer.instance.url
    end
    server = ServerProcess.new("-r", FIXTURE, *flags, namespace: @namespace, env: env).start
    @servers << server
    wait_until_started(server) if wait
    server
  end

  def wait_until_started(server, timeout: 15)
    wait_for(timeout: timeout, message: "server #{server.pid} to start\n#{server.log}") do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, "the server did not start:\n#{server.log}"
  end

  # The server's id in the process registry, from its start line.
  def server_id(server) = server.log[/ started: (\S+),/, 1]

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
    client.call("INFO", "commandstats").lines.each_with_object({}) do |line, calls|
      name, count = line.match(/\Acmdstat_([^:]+):calls=(\d+)/)&.captures
      calls[name] = count.to_i if name
    end
  end

  # Asserts no command that walks the keyspace was run since the last CONFIG RESETSTAT.
  def refute_keyspace_walk(client)
    calls = command_calls(client)
    walks = calls.slice("scan", "keys", "randomkey", "flushdb", "flushall")
    assert_empty walks, "no command may walk or flush the keyspace; commands run: #{calls.inspect}"
  end

  # Parsed payloads of the retry or dead set.
  def set_jobs(set) = store.set_entries(set, limit: 100_000).map { |payload, _score| JSON.parse(payload) }

  # How many times the record holds this entry.
  def recorded_count(entry) = recorded.count(entry)

  # Lines of a server's log that match a pattern.
  def log_lines(server, pattern) = server.log.lines.grep(pattern)
end

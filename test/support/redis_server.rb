# frozen_string_literal: true

require "socket"
require_relative "ports"
require "tmpdir"
require "fileutils"

# A private redis-server on a free loopback port. `RedisServer.instance` is the suite's shared one, started once and
# stopped after the run; tests that break Redis (restart it, stall it) start one of their own with `new.start`.
class RedisServer
  attr_reader :port, :dir, :pid

  def self.instance
    @instance ||= new.start
  end

  # @parameter appendonly [Boolean] keep an append-only file (fsync on every write) so data survives a restart.
  # @parameter args [Array(String)] more redis-server arguments (--replicaof, --cluster-enabled, --sentinel).
  # @parameter config_file [String | Nil] a config file to start from (a sentinel needs one it can rewrite).
  def initialize(appendonly: false, args: [], config_file: nil)
    @config_file = config_file
    @dir = Dir.mktmpdir("jiggler-redis")
    @port = Ports.free_port
    @appendonly = appendonly
    @args = args
  end

  def url = "redis://127.0.0.1:#{@port}/0"

  def start
    binary = ENV.fetch("REDIS_SERVER", "redis-server")
    @pid = Process.spawn(
      binary, *@config_file,
      "--port", @port.to_s,
      "--bind", "127.0.0.1",
      "--dir", @dir,
      "--save", "",
      "--appendonly", @appendonly ? "yes" : "no",
      "--appendfsync", "always",
      "--loglevel", "warning",
      # DEBUG SLEEP stalls Redis in fault tests
      "--enable-debug-command", "local",
      *@args,
      out: File::NULL,
      err: File::NULL
    )
    Ports.wait_until_listening(@port, "redis-server")
    # Minitest runs the tests from an at_exit hook; stop only after they are done.
    Minitest.after_run { stop } unless @cleanup_registered
    @cleanup_registered = true
    self
  end

  # Stops the server; its data directory stays for a restart.
  def shutdown
    return unless @pid
    Process.kill("TERM", @pid)
    Process.wait(@pid)
    @pid = nil
  rescue Errno::ESRCH, Errno::ECHILD
    @pid = nil
  end

  # Ends the server with SIGKILL, as a crash would: no goodbye to replicas or clients.
  def kill
    Process.kill("KILL", @pid)
    Process.wait(@pid)
    @pid = nil
  end

  # A new connection to this server.
  def client = RedisClient.new(host: "127.0.0.1", port: @port)

  # Stops and starts again on the same port and data directory.
  def restart
    shutdown
    start
  end

  def stop
    shutdown
    FileUtils.rm_rf(@dir)
  end

  def running? = !@pid.nil?
end

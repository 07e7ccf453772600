# frozen_string_literal: true

require "rbconfig"

# Runs the real `jiggler` executable in a child process, with the test's Redis and namespace.
class ServerProcess
  ROOT = File.expand_path("../..", __dir__)
  EXE = File.join(ROOT, "exe", "jiggler")

  attr_reader :pid, :log_path
  # The Process::Status `wait` saw, once the process has exited.
  attr_reader :status

  # @parameter args [Array(String)] command line flags.
  # @parameter namespace [String] passed to the jobs file as JIGGLER_TEST_NAMESPACE.
  # @parameter env [Hash] more environment; the test Redis's REDIS_URL unless it names one (nil: none).
  # @parameter command [Array(String)] what to run instead of this repository's `exe/jiggler` (a `bin/jiggler`).
  # @parameter chdir [String] the directory to run it in.
  def initialize(*args, namespace:, env: {}, command: [EXE], chdir: ROOT)
    @args = args
    @env = {"JIGGLER_TEST_NAMESPACE" => namespace}.merge(env)
    @env["REDIS_URL"] = RedisServer.instance.url unless @env.key?("REDIS_URL")
    @command = command
    @chdir = chdir
    @log_path = File.join(Dir.mktmpdir("jiggler-server"), "server.log")
  end

  def start
    @pid = Process.spawn(
      @env, RbConfig.ruby, *@command, *@args,
      out: @log_path,
      err: [:child, :out],
      chdir: @chdir
    )
    self
  end

  def log = File.exist?(@log_path) ? File.read(@log_path) : ""

  def signal(name) = Process.kill(name, @pid)

  # Waits for the process to exit; returns its exit status, or nil after the timeout.
  def wait(timeout: 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      _, @status = Process.wait2(@pid, Process::WNOHANG)
      return @status.exitstatus if @status
      return nil if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.02
    end
  end

  def running?
    Process.kill(0, @pid) && Process.wait2(@pid, Process::WNOHANG).nil?
  rescue Errno::ESRCH, Errno::ECHILD
    false
  end

  # Stops the process for good (used in teardown).
  def kill
    return unless @pid && running?
    Process.kill("KILL", @pid)
    Process.wait(@pid)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end
end

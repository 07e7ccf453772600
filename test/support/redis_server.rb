# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"

# A private redis-server on a free loopback port, started once for the whole test run and stopped at exit.
class RedisServer
  attr_reader :port, :dir

  def self.instance
    @instance ||= new.tap(&:start)
  end

  def initialize
    @dir = Dir.mktmpdir("jiggler-redis")
    @port = free_port
  end

  def url = "redis://127.0.0.1:#{@port}/0"

  def start
    binary = ENV.fetch("REDIS_SERVER", "redis-server")
    @pid = Process.spawn(binary, "--port", @port.to_s, "--bind", "127.0.0.1", "--dir", @dir, "--save", "",
      "--appendonly", "no", "--loglevel", "warning", out: File::NULL, err: File::NULL)
    wait_until_ready
    # Minitest runs the tests from an at_exit hook; stop only after they are done.
    Minitest.after_run { stop }
  end

  def stop
    return unless @pid
    Process.kill("TERM", @pid)
    Process.wait(@pid)
    @pid = nil
    FileUtils.rm_rf(@dir)
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  private

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def wait_until_ready
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    begin
      TCPSocket.new("127.0.0.1", @port).close
    rescue SystemCallError
      raise "redis-server did not start on port #{@port}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.02
      retry
    end
  end
end

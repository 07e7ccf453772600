# frozen_string_literal: true

# The benchmark harness behind bin/bench: see bench/README.md.
require "json"
require "optparse"
require "socket"
require "tmpdir"
require "fileutils"

# Shared helpers of the harness.
module Bench
  ROOT = File.expand_path("../..", __dir__)
  OURS_VERSION =
    File.read(File.join(ROOT, "lib", "jiggler", "version.rb"))[/VERSION = "([^"]+)"/, 1]
  STAMP = Time.now.utc.strftime("%Y%m%d-%H%M%S")

  module_function

  def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def free_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end

  def listening?(port)
    TCPSocket.new("127.0.0.1", port).close
    true
  rescue SystemCallError
    false
  end

  def wait_until(timeout, what)
    deadline = monotonic + timeout
    until yield
      if monotonic > deadline
        raise "timed out after #{timeout} s waiting for #{what}"
      end
      sleep 0.01
    end
  end

  def percentile(values, fraction)
    sorted = values.sort
    sorted[[(sorted.size * fraction).ceil - 1, 0].max]
  end
end

require_relative "redis"
require_relative "processors"
require_relative "jobs_source"
require_relative "measure"
require_relative "report"
require_relative "live_workloads"
require_relative "workloads"

Bench::Workloads.new(ARGV).run if $PROGRAM_NAME == __FILE__

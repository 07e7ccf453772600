# frozen_string_literal: true

require "securerandom"
require "socket"

module Jiggler
  module Server
    # Who this server process is: its id in the process registry and what its heartbeat reports.
    #
    # The id is formed from the name, the settings, the start time, the pid and the hostname. A
    # supervisor picks the name and start time of each server process it forks, so that it knows
    # that process's id from its pid alone (Supervisor recovers the jobs of a child that died under
    # that id).
    class Identity
      attr_reader :id, :name

      # A new random name.
      # @returns [String]
      def self.new_name = "jiggler:svr:#{SecureRandom.hex(6)}"

      # @parameter config [Config]
      # @parameter name [String] the process's name (random by default).
      # @parameter started_at [Integer] epoch seconds.
      # @parameter pid [Integer] the process's pid (a child's, for the id the child will have).
      def initialize(
        config,
        name: Identity.new_name,
        started_at: Time.now.to_i,
        pid: Process.pid
      )
        @config = config
        @name = name
        @started_at = started_at
        @pid = pid
        @hostname = Socket.gethostname
        @id = [
          @name,
          config[:concurrency],
          config[:timeout],
          config.queue_names.join(","),
          config[:poller_enabled] ? 1 : 0,
          @started_at,
          @pid,
          @hostname
        ].join(":")
      end

      # Marks the process quiet (it fetches no more jobs), for what it reports.
      def quiet! = @quiet = true

      # What the summary shows for this process.
      # @parameter current_jobs [Hash(String, Hash)] the jobs running now, by handle as a String (Heartbeat#running).
      # @returns [Hash]
      def info(current_jobs)
        {
          "heartbeat" => Time.now.to_f,
          "rss" => rss,
          "current_jobs" => current_jobs,
          "name" => @name,
          "concurrency" => @config[:concurrency].to_s,
          "timeout" => @config[:timeout].to_s,
          "queues" => @config.queue_names.join(","),
          "poller_enabled" => @config[:poller_enabled],
          "started_at" => @started_at.to_s,
          "pid" => @pid.to_s,
          "hostname" => @hostname,
          "quiet" => @quiet == true
        }
      end

      # Resident memory in kilobytes (0 where /proc is missing).
      def rss
        pages = ::File.read("/proc/self/statm").split[1].to_i
        pages * PAGE_KB
      rescue SystemCallError
        0
      end

      PAGE_KB = begin
        require "etc"
        Etc.sysconf(Etc::SC_PAGESIZE) / 1024
      rescue NotImplementedError, NameError
        4
      end
      private_constant :PAGE_KB
    end
  end
end

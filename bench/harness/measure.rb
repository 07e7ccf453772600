# frozen_string_literal: true

require "etc"
require "fileutils"

module Bench
  # One server process under measurement: spawned, watched through /proc and the jobs' marker files, stopped.
  class Measure
    POLL = 0.005
    CLOCK_TICK = Etc.sysconf(Etc::SC_CLK_TCK)

    attr_reader :dir, :pid, :spawned

    # @parameter processor [Processor]
    # @parameter dir [String] a fresh directory for the markers and the log.
    def initialize(processor, jobs_file, concurrency, dir:, env:)
      @processor = processor
      @jobs_file = jobs_file
      @concurrency = concurrency
      @dir = dir
      @env = env
      @log = File.join(dir, "server.log")
    end

    def start
      @spawned = Bench.monotonic
      # Several processes share the jobs: they count finished ones in one file (see JobsSource).
      counter = @processor.processes ? {"BENCH_COUNTER" => File.join(@dir, "counter")} : {}
      @pid = Process.spawn(
        @processor.env(@env.merge("BENCH_DIR" => @dir).merge(counter)),
        *@processor.server_command(@jobs_file, @concurrency),
        out: @log, err: [:child, :out], chdir: @dir, pgroup: true
      )
      self
    end

    # Waits for the jobs' marker `name`, sampling RSS and CPU time when the first job starts.
    # @returns [Float] the CLOCK_MONOTONIC time the marker holds.
    def wait_for(name, timeout)
      path = File.join(@dir, name)
      deadline = Bench.monotonic + timeout
      until File.exist?(path)
        sample_start if File.exist?(File.join(@dir, "started"))
        check_alive
        if Bench.monotonic > deadline
          raise "#{@processor.label}: timed out after #{timeout} s " \
            "waiting for #{name}\n#{log_tail}"
        end
        sleep POLL
      end
      sample_start
      Float(File.read(path))
    end

    # RSS (kB) and CPU time (s) when the first job started (within a poll).
    attr_reader :start_rss, :start_cpu

    # When the first job started (CLOCK_MONOTONIC).
    def first_job = Float(File.read(File.join(@dir, "started")))

    # Resident set size in kB, from /proc/PID/status: with `jiggler -p N`, the supervisor's and its children's added
    # (pages they share copy-on-write count once per process).
    def rss
      pids.sum { |pid| read("/proc/#{pid}/status")[/^VmRSS:\s+(\d+)/, 1].to_i }
    end

    # User + system CPU seconds, from /proc/PID/stat (with `jiggler -p N`, of the supervisor and its children).
    def cpu
      pids.sum do |pid|
        fields = read("/proc/#{pid}/stat").rpartition(")").last.split
        (fields[11].to_i + fields[12].to_i).fdiv(CLOCK_TICK)
      end
    end

    def stop
      return unless @pid
      Process.kill(:TERM, @pid)
      deadline = Bench.monotonic + 30
      until Process.wait(@pid, Process::WNOHANG)
        if Bench.monotonic > deadline
          Process.kill(:KILL, -@pid)
          Process.wait(@pid)
          break
        end
        sleep 0.02
      end
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    ensure
      @pid = nil
    end

    def log_tail
      File.exist?(@log) ? File.readlines(@log).last(15).join : "(no log)"
    end

    private

    def sample_start
      @start_rss ||= rss
      @start_cpu ||= cpu
    end

    # The server process and its children (a supervisor's servers).
    def pids
      [@pid] + Dir["/proc/#{@pid}/task/*/children"].flat_map do |path|
        read(path).split.map(&:to_i)
      end
    end

    # A child may exit between listing and reading.
    def read(path)
      File.read(path)
    rescue Errno::ENOENT, Errno::ESRCH
      ""
    end

    def check_alive
      return unless Process.wait(@pid, Process::WNOHANG)
      @pid = nil
      raise "#{@processor.label} exited early:\n#{log_tail}"
    end
  end
end

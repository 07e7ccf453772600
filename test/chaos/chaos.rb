# frozen_string_literal: true

require "jiggler"

# Settings and helpers of the chaos test (chaos_test.rb); the faults of each store are in stores.rb.
module Chaos
  # Jobs per run, the same on each store: three servers keep up with 30 workers of 20-40 ms jobs (about 1,000 a
  # second) on each, so every run lasts about as long.
  JOBS = 20_000
  SERVERS = 3
  CONCURRENCY = 10
  # Short, to keep the run short: registrations live 3.3 s, heartbeats every 1 s, reapers look every 1 s.
  RECOVERY_TIMEOUT = 5
  # The kills here are random: a job in flight in three killed processes is bad luck, not a poison pill. With the
  # default of 3 such a job would rightly go to the dead set and make "every id ran" fail by chance, so the rule is
  # set out of reach; the poison-pill path has targeted tests of its own.
  MAX_CRASHES = 100
  # Slack on top of recovery_timeout (plus any time the store was stalled, locked or down meanwhile): back-off and
  # polling.
  MARGIN = 1.0
  # The servers' settings that bound a recovery, derived as the servers derive them.
  SETTINGS = Jiggler::Config.new.tap do |config|
    config[:recovery_timeout] = RECOVERY_TIMEOUT
  end
  # A reaper that lost touch with its store for more than two of its checks waits this long before it trusts expiries
  # again, since no process could beat meanwhile (Reaper#registrations_trusted?).
  REAPER_GRACE = SETTINGS.registration_ttl + SETTINGS.heartbeat_interval
  MIN_KILLS = 8
  # Seconds a stall (Redis) or a short write lock (SQLite) lasts.
  STALL = 1.5
  # Seconds of chaos at most, and then for the last jobs to run.
  CHAOS_LIMIT = 60
  DRAIN_LIMIT = 30

  module_function

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # The ids the jobs recorded, read from the record file as it grows.
  class Records
    def initialize(path)
      @path = path
      @offset = 0
      # id => pids that ran it, in order
      @runs = Hash.new { |hash, id| hash[id] = [] }
    end

    # Reads the lines appended since the last call. @returns [self]
    def refresh
      return self unless File.exist?(@path)
      data = File.open(@path) do |file|
        file.pread(file.size - @offset, @offset) if file.size > @offset
      end.to_s
      complete = data.rindex("\n") or return self
      data[0..complete].each_line do |line|
        id, pid = line.split
        @runs[Integer(id)] << Integer(pid)
      end
      @offset += complete + 1
      self
    end

    def ran = @runs.size

    def runs = @runs.values.sum(&:size)

    def missing(total) = (1..total).reject { |id| @runs.key?(id) }

    # @returns [Hash(Integer, Array(Integer))] ids that ran more than once, with the pids that ran them.
    def duplicates = @runs.select { |_, pids| pids.size > 1 }
  end

  # A kill -9 of one server, and how long until its jobs were back in their queue and it was forgotten.
  Kill = Struct.new(
    :number, :process, :pid, :at, :held, :recovered_at,
    keyword_init: true
  ) do
    def seconds = recovered_at && recovered_at - at
  end

  # Watches killed processes on a thread of its own, every 20 ms: how many jobs each held in flight (first look),
  # and when it held none and had left the registry (a reaper recovered it).
  class RecoveryWatch
    # @parameter probe [#look] answers [jobs in flight, registered?] for a process, on a connection of its own.
    def initialize(probe)
      @probe = probe
      @kills = []
      @pending = []
      @mutex = Mutex.new
      @stopping = false
      @thread = Thread.new { run }
    end

    def add(kill) = @mutex.synchronize { @kills << kill && @pending << kill }

    def kills = @mutex.synchronize { @kills.dup }

    def pending? = @mutex.synchronize { @pending.any? }

    def stop
      @stopping = true
      @thread.join(5) || @thread.kill
      @probe.close
    end

    private

    def run
      until @stopping
        @mutex.synchronize { @pending.dup }.each { |kill| check(kill) }
        sleep 0.02
      end
    end

    def check(kill)
      held, registered = @probe.look(kill.process)
      seen = Chaos.now
      @mutex.synchronize do
        kill.held ||= held
        next if held.positive? || registered
        kill.recovered_at = seen
        @pending.delete(kill)
      end
    rescue RedisClient::Error, Jiggler::Store::ConnectionError
      nil # the store is down or stalled: look again next round
    end
  end
end

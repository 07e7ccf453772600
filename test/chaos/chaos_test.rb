# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "json"
require "set"
require "tmpdir"
require "jiggler/cli"
require_relative "../fixtures/chaos_jobs"

# Settings and helpers of the chaos test below.
module Chaos
  JOBS = 20_000
  SERVERS = 3
  CONCURRENCY = 10
  # Short, to keep the run short: registrations live 3.3 s, heartbeats every 1 s, reapers look every 1 s.
  RECOVERY_TIMEOUT = 5
  # The kills here are random: a job in flight in three killed processes is bad luck, not a poison pill. With the
  # default of 3 such a job would rightly go to the dead set and make "every id ran" fail by chance, so the rule is
  # set out of reach; the poison-pill path has targeted tests of its own.
  MAX_CRASHES = 100
  # Slack on top of recovery_timeout (plus any time Redis was stalled or down meanwhile): back-off and polling.
  MARGIN = 1.0
  # The servers' settings that bound a recovery, derived as the servers derive them.
  SETTINGS = Jiggler::Config.new.tap { |config| config[:recovery_timeout] = RECOVERY_TIMEOUT }
  # A reaper that lost touch with Redis for more than two of its checks waits this long before it trusts expiries
  # again, since no process could beat meanwhile (Reaper#registrations_trusted?).
  REAPER_GRACE = SETTINGS.registration_ttl + SETTINGS.heartbeat_interval
  ACTIONS = %i[kill client_kill stall redis_restart].freeze
  MIN_KILLS = 8
  STALL = 1.5
  # Seconds of chaos at most, and then for the last jobs to run.
  CHAOS_LIMIT = 60
  DRAIN_LIMIT = 30

  module_function

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Runs a block until it does not fail for Redis being restarted (refused connection, LOADING), or `timeout` passes.
  def retrying(timeout: 10)
    deadline = now + timeout
    begin
      yield
    rescue RedisClient::ConnectionError, RedisClient::CommandError => error
      raise if now > deadline || (error.is_a?(RedisClient::CommandError) && !error.message.start_with?("LOADING"))
      sleep 0.05
      retry
    end
  end

  def call(redis, *command) = retrying { redis.call(*command) }

  # The ids the jobs recorded, read from the record file as it grows.
  class Records
    def initialize(path)
      @path = path
      @offset = 0
      @runs = Hash.new { |hash, id| hash[id] = [] } # id => pids that ran it, in order
    end

    # Reads the lines appended since the last call. @returns [self]
    def refresh
      return self unless File.exist?(@path)
      data = File.open(@path) { |file| file.pread(file.size - @offset, @offset) if file.size > @offset }.to_s
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
  Kill = Struct.new(:number, :process, :pid, :at, :held, :recovered_at, keyword_init: true) do
    def seconds = recovered_at && recovered_at - at
  end

  # Watches killed processes on a thread of its own, every 20 ms: how many jobs each held in flight (first look),
  # and when its in-flight hash was empty and it had left the registry (a reaper recovered it).
  class RecoveryWatch
    def initialize(url, keys)
      @redis = RedisClient.new(url: url, connect_timeout: 0.5, read_timeout: 3, write_timeout: 1)
      @keys = keys
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
      @redis.close
    end

    private

    def run
      until @stopping
        @mutex.synchronize { @pending.dup }.each { |kill| check(kill) }
        sleep 0.02
      end
    end

    def check(kill)
      held, score = @redis.pipelined do |pipeline|
        pipeline.call("HLEN", @keys.in_flight(kill.process))
        pipeline.call("ZSCORE", @keys.processes, kill.process)
      end
      seen = Chaos.now
      @mutex.synchronize do
        kill.held ||= held
        next unless held.zero? && score.nil?
        kill.recovered_at = seen
        @pending.delete(kill)
      end
    rescue RedisClient::Error
      nil # Redis is down or stalled: look again next round
    end
  end
end

# The chaos suite: 20k jobs on three real servers while servers are killed with -9 and replaced, every Redis connection
# is cut, Redis is stalled and restarted. Every job must run at least once, nothing may be left anywhere, and every
# killed server's jobs must be back in their queue within recovery_timeout (plus the time Redis was unavailable).
# Run it alone with `bundle exec rake test:chaos`; CHAOS_SEED=n replays the same choice of actions.
describe "jiggler under chaos" do
  before do
    @started = Chaos.now
    @seed = Integer(ENV.fetch("CHAOS_SEED") { rand(100_000).to_s })
    @rng = Random.new(@seed)
    @redis = RedisServer.new(appendonly: true).start
    @dir = Dir.mktmpdir("jiggler-chaos")
    @records = Chaos::Records.new(File.join(@dir, "records.txt"))
    Jiggler.configure { |config| config[:redis_url] = @redis.url }
    @control = RedisClient.new(url: @redis.url, connect_timeout: 1, read_timeout: 5, write_timeout: 5)
    @server_env = {"REDIS_URL" => @redis.url, "CHAOS_RECORD_FILE" => File.join(@dir, "records.txt"),
                   "CHAOS_RECOVERY_TIMEOUT" => Chaos::RECOVERY_TIMEOUT.to_s, "CHAOS_MAX_CRASHES" => Chaos::MAX_CRASHES.to_s}
    @ids = {} # server => its process id in the registry
    @live = []
    @unexpected = [] # servers that exited without being killed
    @actions = Hash.new(0)
    @outages = [] # [from, to] while Redis was stalled or down
    @connections_cut = 0
    @events = []
  end

  after do
    unless passed?
      report(@statuses || {}) unless @reported
      diagnose
    end
    @watch&.stop
    @servers.each(&:kill)
    @control&.close
    FileUtils.cp_r(File.join(@redis.dir, "appendonlydir"), @dir) unless passed? # the whole history, for a post-mortem
    @redis&.stop
    if passed?
      (@servers.map { |server| File.dirname(server.log_path) } << @dir).each { |dir| FileUtils.rm_rf(dir) }
    else
      warn("chaos run failed (CHAOS_SEED=#{@seed}); records and the append-only file in #{@dir}, server logs:",
        *@servers.map { |server| "  pid #{server.pid}: #{server.log_path}" })
    end
  end

  it "runs every job at least once through kills, cut connections, stalls and restarts" do
    ChaosJob.enqueue_bulk((1..Chaos::JOBS).zip)
    @watch = Chaos::RecoveryWatch.new(@redis.url, store.keys)
    @stall = debug_allowed? ? "DEBUG SLEEP" : "CLIENT PAUSE ALL"
    Chaos::SERVERS.times { @live << boot_server }
    chaos
    drain
    @statuses = stop_servers
    report(@statuses)
    check(@statuses)
  rescue SignalException
    # Minitest skips teardown on Ctrl-C or TERM: stop the servers and Redis here, or they outlive the run.
    @servers.each(&:kill)
    @redis.stop
    raise
  end

  # Every second or so, one action at random; each kind at least twice (a shuffled plan comes first). Goes on until
  # the plan is done and no job is left to run, or for CHAOS_LIMIT seconds at most.
  def chaos
    deadline = Chaos.now + Chaos::CHAOS_LIMIT
    plan = (Chaos::ACTIONS * 2 + [:kill] * (Chaos::MIN_KILLS - 2)).shuffle(random: @rng)
    until (plan.empty? && finished?) || Chaos.now > deadline
      act(plan.shift || Chaos::ACTIONS.sample(random: @rng))
      replace_exited
      sleep(0.7 + @rng.rand * 0.6)
    end
    @chaos_took = Chaos.now - @started
    @plan_left = plan
  end

  def act(action)
    @actions[action] += 1
    event(action)
    case action
    when :kill then kill_one
    when :client_kill then cut_connections
    when :stall then stall
    when :redis_restart then restart_redis
    end
  end

  # kill -9 a random started server, then start a replacement.
  def kill_one
    victim = @live.select { |server| @ids[server] }.sample(random: @rng) or return
    victim.signal("KILL")
    @watch.add(Chaos::Kill.new(number: @watch.kills.size + 1, process: @ids[victim], pid: victim.pid, at: Chaos.now))
    event("killed #{victim.pid}")
    victim.wait(timeout: 5)
    @live.delete(victim)
    @live << boot_server
  end

  # Cuts every client connection: the servers' pools, heartbeats and push subscriptions (the chaos's own is spared).
  def cut_connections
    @connections_cut += %w[normal pubsub].sum { |type| Chaos.call(@control, "CLIENT", "KILL", "TYPE", type) }
  end

  # Redis answers nothing for STALL seconds.
  def stall
    from = Chaos.now
    if @stall == "DEBUG SLEEP"
      Chaos.call(@control, "DEBUG", "SLEEP", Chaos::STALL.to_s)
    else
      Chaos.call(@control, "CLIENT", "PAUSE", (Chaos::STALL * 1000).to_i.to_s, "ALL")
      sleep Chaos::STALL
    end
    @outages << [from, Chaos.now]
  end

  # Stops and starts Redis on the same port; the append-only file (fsync always) keeps every write.
  def restart_redis
    from = Chaos.now
    @redis.restart
    Chaos.call(@control, "EXISTS", store.keys.processes) # refused with LOADING until the append-only file is read
    @outages << [from, Chaos.now]
  end

  # Redis 7 refuses DEBUG unless started with enable-debug-command; then the stall is a CLIENT PAUSE ALL instead.
  def debug_allowed?
    Chaos.call(@control, "DEBUG", "SLEEP", "0")
    true
  rescue RedisClient::CommandError
    false
  end

  def boot_server
    server = ServerProcess.new("-r", "./test/fixtures/chaos_jobs.rb", "-c", Chaos::CONCURRENCY.to_s, "-t", "1",
      namespace: @namespace, env: @server_env).start
    @servers << server
    wait_for(timeout: 30, message: "a server to start\n#{server.log}") { server.log.include?("started:") || !server.running? }
    @ids[server] = server.log[/started: (\S+), concurrency/, 1]
    event("started #{server.pid}: #{@ids[server] || "failed"}")
    server
  end

  # A server that exited without being killed is a failure; it is replaced so the run goes on, and reported.
  def replace_exited
    @live.reject(&:running?).each do |server|
      event("#{server.pid} exited by itself")
      @unexpected << server
      @live.delete(server)
      @live << boot_server
    end
  end

  # Whether every job ran, or none is left anywhere to run (then the ones that did not run are lost).
  def finished? = @records.refresh.ran == Chaos::JOBS || jobs_anywhere.zero?

  # How many jobs are queued, in flight in any server, retrying, scheduled or dead, read in one atomic step. A job
  # leaves flight only after its record is written, so once this is 0, a job without a record never will have one.
  def jobs_anywhere
    keys = store.keys
    replies = Chaos.retrying do
      @control.multi do |transaction|
        @ids.values.compact.each { |id| transaction.call("HLEN", keys.in_flight(id)) }
        transaction.call("LLEN", keys.queue("default"))
        %i[retry scheduled dead].each { |set| transaction.call("ZCARD", keys.public_send(set)) }
      end
    end
    replies.sum
  end

  # Waits for the last jobs to run, every killed server to be recovered, every job to be acknowledged and every
  # background loop of the live servers to work again.
  def drain
    wait_for(timeout: Chaos::DRAIN_LIMIT, message: "every job to run (#{@records.ran} of #{Chaos::JOBS})") do
      replace_exited
      finished?
    end
    @all_ran = Chaos.now - @started if @records.ran == Chaos::JOBS
    wait_for(timeout: Chaos::RECOVERY_TIMEOUT * 2, message: "every killed server to be recovered") { !@watch.pending? }
    Jiggler.configure { |config| config[:redis_url] = @redis.url } # a fresh client: the old pool's connections were cut
    wait_for(timeout: 10, message: "every job to be acknowledged") { held_anywhere.zero? && store.queue_sizes.empty? }
    wait_for(timeout: 10, message: "every loop to work again: #{stuck_loops}") { stuck_loops.empty? }
  end

  # TERMs the live servers (each gets -t 1 and the CLI's grace to exit). @returns [Hash(ServerProcess, Integer | Nil)] their exit statuses.
  def stop_servers
    @live.each { |server| server.signal("TERM") }
    @live.to_h { |server| [server, server.wait(timeout: 1 + Jiggler::CLI::STOP_GRACE + 3)] }
  end

  # Notes what the chaos did when, for the failure report.
  def event(text) = @events << "#{Time.now.utc.strftime("%H:%M:%S.%L")} #{text}"

  def held_anywhere = @ids.values.compact.sum { |id| store.in_flight_count(id) }

  # Loops of live servers whose last logged outage has no "working again" after it.
  def stuck_loops
    @live.flat_map do |server|
      ongoing = {}
      server.log.each_line do |line|
        ongoing[$1] = true if line =~ /(?:ERROR|WARN): ([a-z ]+): .*retrying until it works$/
        ongoing.delete($1) if line =~ /INFO: ([a-z ]+): working again after/
      end
      ongoing.keys.map { |loop_name| "#{loop_name} (pid #{server.pid})" }
    end
  end

  def logs = @servers.map(&:log).join

  # Processes a reaper recovered, as logged: the same one may be logged by several reapers.
  def reaped = logs.scan(/reaper: process (\S+) died/).flatten

  # Seconds Redis was unavailable between two moments.
  def outage_between(from, to) = @outages.sum { |start, stop| [[stop, to].min - [start, from].max, 0].max }

  def recovery_bound(kill)
    to = kill.recovered_at || Chaos.now
    Chaos::RECOVERY_TIMEOUT + Chaos::MARGIN + outage_between(kill.at, to) + reaper_grace(kill.at, to)
  end

  # An outage of a reaper interval or more (a stall) can leave more than two checks between a reaper's contacts with
  # Redis, after which it waits REAPER_GRACE before believing an expiry; shorter outages (a restart, a cut connection)
  # cannot.
  def reaper_grace(from, to)
    long = @outages.any? { |start, stop| stop - start >= Chaos::SETTINGS.reaper_interval && start < to && stop > from }
    long ? Chaos::REAPER_GRACE : 0
  end

  def report(statuses)
    kills = @watch&.kills || []
    times = kills.filter_map(&:seconds).sort
    duplicates = @records.refresh.duplicates
    killed_pids = kills.map(&:pid).to_set
    after_kill = duplicates.count { |_, pids| killed_pids.include?(pids.first) }
    missing = @records.missing(Chaos::JOBS)
    lines = [
      "chaos report (CHAOS_SEED=#{@seed}; #{Chaos::SERVERS} servers x #{Chaos::CONCURRENCY} workers; recovery_timeout #{Chaos::RECOVERY_TIMEOUT} s)",
      "  jobs: #{Chaos::JOBS} enqueued, #{@records.ran} ran (#{@records.runs} runs), #{missing.size} lost #{missing.first(10)}; " \
        "all ran after #{seconds(@all_ran)}",
      "  duplicates: #{duplicates.size} (#{after_kill} first ran in a server killed before acknowledging, " \
        "#{duplicates.size - after_kill} otherwise); #{format("%.2f", duplicates.size.fdiv([kills.size, 1].max))} per kill",
      "  kills: #{kills.size}; jobs in flight at each: #{kills.map(&:held).inspect}",
      "  recovery after kill -9: median #{seconds(median(times))}, max #{seconds(times.last)} (#{times.size} of #{kills.size} recovered)"
    ]
    kills.each do |kill|
      lines << "    kill #{kill.number}: pid #{kill.pid}, #{kill.held.inspect} in flight, back in #{seconds(kill.seconds)} " \
        "(bound #{seconds(recovery_bound(kill))}), #{duplicates.count { |_, pids| pids.first == kill.pid }} duplicates"
    end
    lines << "  actions: #{Chaos::ACTIONS.map { |action| "#{action} #{@actions[action]}" }.join(", ")}; stall by " \
      "#{@stall} #{Chaos::STALL} s; #{@connections_cut} connections cut; Redis unavailable " \
      "#{@outages.map { |from, to| format("%.2f", to - from) }.join(", ")} s"
    lines << "  server logs: #{logs.scan("retrying until it works").size} loop outages, " \
      "#{logs.scan("working again after").size} recoveries, #{reaped.uniq.size} processes reaped (#{reaped.size} reaper lines)"
    lines << "  servers: #{@servers.size} started, #{@unexpected.size} exited by themselves, exit statuses at TERM #{statuses.values.inspect}"
    lines << "  time: chaos #{seconds(@chaos_took)}, total #{seconds(Chaos.now - @started)}"
    puts "", *lines
    @reported = true
  end

  def check(statuses)
    assert_empty @plan_left, "the chaos should have run every planned action within #{Chaos::CHAOS_LIMIT} s"
    Chaos::ACTIONS.each { |action| assert_operator @actions[action], :>=, 2, "#{action} should happen at least twice" }
    assert_empty @unexpected.map { |server| "pid #{server.pid}:\n#{server.log.lines.last(20).join}" }, "no server may exit by itself"
    missing = @records.missing(Chaos::JOBS)
    assert_empty missing, "every job should run at least once; #{missing.size} are nowhere (not queued, in flight, " \
      "retrying or dead) and never ran: #{missing.first(20)}"
    killed = @watch.kills
    assert_empty reaped.uniq - killed.map(&:process), "a reaper should recover only processes that were killed"
    # Every run but the last must have been in a server that was then killed before acknowledging it.
    unexplained = @records.duplicates.reject { |_, pids| (pids[0..-2] - killed.map(&:pid)).empty? }
    assert_empty unexplained, "a job may run twice only after a kill -9 of the server that ran it first"
    killed.each do |kill|
      assert kill.seconds, "kill #{kill.number} (#{kill.process}) was never recovered"
      assert_operator kill.seconds, :<=, recovery_bound(kill), "kill #{kill.number}: jobs back too late"
    end
    statuses.each { |server, status| assert_equal 0, status, "a TERMed server should exit 0:\n#{server.log.lines.last(20).join}" }
    check_nothing_left
  end

  # After the servers stopped: no job queued, in flight, scheduled, retrying or dead, and no process registered.
  def check_nothing_left
    assert_equal({}, store.queue_sizes, "queues should be empty")
    assert_equal({}, @ids.values.compact.to_h { |id| [id, store.in_flight_count(id)] }.reject { |_, count| count.zero? },
      "no process should hold jobs in flight")
    counts = store.counts
    dead = store.set_entries(:dead, limit: 5).map { |payload, _| JSON.parse(payload).values_at("args", "error_class", "error_message") }
    assert_equal 0, counts[:dead], "no job should be dead: #{dead.inspect}"
    assert_equal [0, 0], counts.values_at(:retry, :scheduled), "no job should be retrying or scheduled"
    assert_empty Chaos.call(@control, "ZRANGE", store.keys.processes, 0, -1), "every process should have left the registry"
  end

  # After a failure: the chaos timeline, and where the jobs that never ran are.
  def diagnose
    warn("chaos timeline (UTC):", *@events.map { |line| "  #{line}" })
    missing = @records.refresh.missing(Chaos::JOBS)
    return if missing.empty?
    keys = store.keys
    queued = Chaos.call(@control, "LRANGE", keys.queue("default"), 0, -1).map { |payload| JSON.parse(payload)["args"].first }
    warn("#{missing.size} jobs never ran: #{missing.first(20)}; queued: #{queued & missing}; counts #{store.counts}")
    registry = Chaos.call(@control, "ZRANGE", keys.processes, 0, -1, "WITHSCORES").to_h
    @ids.each do |server, id|
      next unless id
      held = Chaos.call(@control, "HGETALL", keys.in_flight(id)).values.map { |payload| JSON.parse(payload)["args"].first }
      warn("  pid #{server.pid}#{" (killed)" if @watch&.kills&.any? { |kill| kill.pid == server.pid }}: registered " \
        "#{registry.key?(id)}, registration ttl #{Chaos.call(@control, "PTTL", keys.process(id))} ms, " \
        "in flight #{held.size}, of them never ran: #{held & missing}")
    end
  rescue => error
    warn("could not diagnose: #{error.class}: #{error.message}")
  end

  def median(sorted) = sorted.empty? ? nil : (sorted[(sorted.size - 1) / 2] + sorted[sorted.size / 2]) / 2.0

  def seconds(value) = value ? format("%.2f s", value) : "-"
end

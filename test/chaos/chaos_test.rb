# frozen_string_literal: true

require "test_helper"
require "fileutils"
require "json"
require "set"
require "tmpdir"
require "jiggler/cli"
require "jiggler/store/sqlite"
require "support/store_target"
require_relative "stores"
require_relative "../fixtures/chaos_jobs"

# The chaos suite, on each store: 20k jobs on three real servers while servers are killed with -9 and replaced, and
# the store fails in its own ways (Redis: every connection cut, Redis stalled and restarted; SQLite: the write lock
# held by another connection; PostgreSQL: every connection terminated, the jobs table locked by another session).
# Every job must run at least once, nothing may be left anywhere, and every killed server's jobs must be back in their
# queue within recovery_timeout (plus the time the store was unavailable).
# Run it alone with `bundle exec rake test:chaos`; CHAOS_SEED=n replays the same choice of actions.
StoreTarget.describe_each("jiggler under chaos") do
  before do
    @started = Chaos.now
    @seed = Integer(ENV.fetch("CHAOS_SEED") { rand(100_000).to_s })
    @rng = Random.new(@seed)
    @jobs = Chaos::JOBS
    @store = Chaos::STORES.fetch(target_name).new(@namespace)
    @dir = Dir.mktmpdir("jiggler-chaos")
    @records = Chaos::Records.new(File.join(@dir, "records.txt"))
    Jiggler.configure { |config| @store.configure(config) }
    @server_env = @store.server_env.merge(
      "CHAOS_RECORD_FILE" => File.join(@dir, "records.txt"),
      "CHAOS_RECOVERY_TIMEOUT" => Chaos::RECOVERY_TIMEOUT.to_s,
      "CHAOS_MAX_CRASHES" => Chaos::MAX_CRASHES.to_s
    )
    @ids = {} # server => its process id in the registry
    @live = []
    @unexpected = [] # servers that exited without being killed
    @actions = Hash.new(0)
    @events = []
  end

  after do
    next unless @records # the store could not be set up: nothing ran
    unless passed?
      report(@statuses || {}) unless @reported
      diagnose
    end
    @watch&.stop
    @servers.each(&:kill)
    # closes the test's own client before its store goes
    Jiggler.configure { |_config| nil }
    # the whole history, for a post-mortem
    @store.stop(evidence: (@dir unless passed?))
    if passed?
      (@servers.map { |server| File.dirname(server.log_path) } << @dir)
        .each { |dir| FileUtils.rm_rf(dir) }
    else
      warn(
        "chaos run failed (CHAOS_SEED=#{@seed}); records and the store's " \
          "files in #{@dir}, server logs:",
        *@servers.map { |server| "  pid #{server.pid}: #{server.log_path}" }
      )
    end
  end

  it "runs every job at least once through kills and the store's faults" do
    ChaosJob.enqueue_bulk((1..@jobs).zip)
    @watch = Chaos::RecoveryWatch.new(@store.probe)
    Chaos::SERVERS.times { @live << boot_server }
    chaos
    drain
    @statuses = stop_servers
    report(@statuses)
    check(@statuses)
  rescue SignalException
    # Minitest skips teardown on Ctrl-C or TERM: stop the servers and the store here, or they outlive the run.
    @servers.each(&:kill)
    @store.stop
    raise
  end

  # Every second or so, one action at random; each kind at least twice (a shuffled plan comes first). Goes on until
  # the plan is done and no job is left to run, or for CHAOS_LIMIT seconds at most.
  def chaos
    deadline = Chaos.now + Chaos::CHAOS_LIMIT
    actions = @store.class::ACTIONS
    plan = (actions * 2 + [:kill] * (Chaos::MIN_KILLS - 2))
      .shuffle(random: @rng)
    until (plan.empty? && finished?) || Chaos.now > deadline
      act(plan.shift || @store.class::SAMPLED.sample(random: @rng))
      replace_exited
      sleep(0.7 + @rng.rand * 0.6)
    end
    @chaos_took = Chaos.now - @started
    @plan_left = plan
  end

  def act(action)
    @actions[action] += 1
    event(action)
    (action == :kill) ? kill_one : @store.act(action)
  end

  # kill -9 a random started server, then start a replacement.
  def kill_one
    victim = @live.select { |server| @ids[server] }
      .sample(random: @rng) or return
    victim.signal("KILL")
    @watch.add(
      Chaos::Kill.new(
        number: @watch.kills.size + 1,
        process: @ids[victim],
        pid: victim.pid,
        at: Chaos.now
      )
    )
    event("killed #{victim.pid}")
    victim.wait(timeout: 5)
    @live.delete(victim)
    @live << boot_server
  end

  def boot_server
    server = ServerProcess.new(
      "-r", "./test/fixtures/chaos_jobs.rb",
      "-c", Chaos::CONCURRENCY.to_s,
      "-t", "1",
      namespace: @namespace, env: @server_env
    ).start
    @servers << server
    wait_for(timeout: 30, message: "a server to start\n#{server.log}") do
      server.log.include?("started:") || !server.running?
    end
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
  def finished?
    @records.refresh.ran == @jobs ||
      @store.jobs_anywhere(@ids.values.compact).zero?
  end

  # Waits for the last jobs to run, every killed server to be recovered, every job to be acknowledged and every
  # background loop of the live servers to work again.
  def drain
    wait_for(
      timeout: Chaos::DRAIN_LIMIT,
      message: "every job to run (#{@records.ran} of #{@jobs})"
    ) do
      replace_exited
      finished?
    end
    @all_ran = Chaos.now - @started if @records.ran == @jobs
    wait_for(
      timeout: Chaos::RECOVERY_TIMEOUT * 2,
      message: "every killed server to be recovered"
    ) { !@watch.pending? }
    # a fresh client: the old pool's connections were cut
    Jiggler.configure { |config| @store.configure(config) }
    wait_for(timeout: 10, message: "every job to be acknowledged") do
      held_anywhere.zero? && store.queue_sizes.empty?
    end
    wait_for(
      timeout: 10,
      message: "every loop to work again: #{stuck_loops}"
    ) { stuck_loops.empty? }
  end

  # TERMs the live servers (each gets -t 1 and the CLI's grace to exit).
  # @returns [Hash(ServerProcess, Integer | Nil)] their exit statuses.
  def stop_servers
    @live.each { |server| server.signal("TERM") }
    @live.to_h do |server|
      [server, server.wait(timeout: 1 + Jiggler::CLI::STOP_GRACE + 3)]
    end
  end

  # Notes what the chaos did when, for the failure report.
  def event(text) = @events << "#{Time.now.utc.strftime("%H:%M:%S.%L")} #{text}"

  def held_anywhere = @ids.values.compact.sum { |id| store.in_flight_count(id) }

  # Loops of live servers whose last logged outage has no "working again" after it.
  def stuck_loops
    @live.flat_map do |server|
      ongoing = {}
      server.log.each_line do |line|
        if line =~ /(?:ERROR|WARN): ([a-z ]+): .*retrying until it works$/
          ongoing[$1] = true
        end
        ongoing.delete($1) if line =~ /INFO: ([a-z ]+): working again after/
      end
      ongoing.keys.map { |loop_name| "#{loop_name} (pid #{server.pid})" }
    end
  end

  def logs = @servers.map(&:log).join

  # Processes a reaper recovered, as logged: the same one may be logged by several reapers.
  def reaped = logs.scan(/reaper: process (\S+) died/).flatten

  # Seconds the store was unavailable between two moments.
  def outage_between(from, to)
    @store.outages.sum do |start, stop|
      [[stop, to].min - [start, from].max, 0].max
    end
  end

  def recovery_bound(kill)
    to = kill.recovered_at || Chaos.now
    Chaos::RECOVERY_TIMEOUT + Chaos::MARGIN + outage_between(kill.at, to) +
      reaper_grace(kill.at, to)
  end

  # An outage of a reaper interval or more (a stall) can leave more than two checks between a reaper's contacts with
  # Redis, after which it waits REAPER_GRACE before believing an expiry; shorter outages (a restart, a cut connection)
  # cannot.
  def reaper_grace(from, to)
    long = @store.outages.any? do |start, stop|
      stop - start >= Chaos::SETTINGS.reaper_interval &&
        start < to && stop > from
    end
    long ? Chaos::REAPER_GRACE : 0
  end

  def report(statuses)
    kills = @watch&.kills || []
    times = kills.filter_map(&:seconds).sort
    duplicates = @records.refresh.duplicates
    killed_pids = kills.map(&:pid).to_set
    after_kill = duplicates.count { |_, pids| killed_pids.include?(pids.first) }
    missing = @records.missing(@jobs)
    lines = [
      "chaos report on #{target_name} (CHAOS_SEED=#{@seed}; " \
        "#{Chaos::SERVERS} servers x #{Chaos::CONCURRENCY} workers; " \
        "recovery_timeout #{Chaos::RECOVERY_TIMEOUT} s)",
      "  jobs: #{@jobs} enqueued, #{@records.ran} ran " \
        "(#{@records.runs} runs), #{missing.size} lost #{missing.first(10)}; " \
        "all ran after #{seconds(@all_ran)}",
      "  duplicates: #{duplicates.size} (#{after_kill} first ran in a server " \
        "killed before acknowledging, " \
        "#{duplicates.size - after_kill} otherwise); " \
        "#{format("%.2f", duplicates.size.fdiv([kills.size, 1].max))} per kill",
      "  kills: #{kills.size}; " \
        "jobs in flight at each: #{kills.map(&:held).inspect}",
      "  recovery after kill -9: median #{seconds(median(times))}, " \
        "max #{seconds(times.last)} (#{times.size} of #{kills.size} recovered)"
    ]
    kills.each do |kill|
      lines << "    kill #{kill.number}: pid #{kill.pid}, " \
        "#{kill.held.inspect} in flight, back in #{seconds(kill.seconds)} " \
        "(bound #{seconds(recovery_bound(kill))}), " \
        "#{duplicates.count { |_, pids| pids.first == kill.pid }} duplicates"
    end
    lines << "  actions: " \
      "#{@store.class::ACTIONS.map { |action| "#{action} #{@actions[action]}" }.join(", ")}; " \
      "#{@store.report}; " \
      "store unavailable " \
      "#{@store.outages.map { |from, to| format("%.2f", to - from) }.join(", ")} s"
    lines << "  server logs: " \
      "#{logs.scan("retrying until it works").size} loop outages, " \
      "#{logs.scan("working again after").size} recoveries, " \
      "#{reaped.uniq.size} processes reaped (#{reaped.size} reaper lines)"
    lines << "  servers: #{@servers.size} started, " \
      "#{@unexpected.size} exited by themselves, " \
      "exit statuses at TERM #{statuses.values.inspect}"
    lines << "  time: chaos #{seconds(@chaos_took)}, " \
      "total #{seconds(Chaos.now - @started)}"
    puts "", *lines
    @reported = true
  end

  def check(statuses)
    assert_empty @plan_left,
      "the chaos should have run every planned action within " \
        "#{Chaos::CHAOS_LIMIT} s"
    @store.class::ACTIONS.each do |action|
      assert_operator @actions[action], :>=, 2,
        "#{action} should happen at least twice"
    end
    assert_empty(
      @unexpected.map do |server|
        "pid #{server.pid}:\n#{server.log.lines.last(20).join}"
      end,
      "no server may exit by itself"
    )
    missing = @records.missing(@jobs)
    assert_empty missing,
      "every job should run at least once; #{missing.size} are nowhere " \
        "(not queued, in flight, retrying or dead) and never ran: " \
        "#{missing.first(20)}"
    killed = @watch.kills
    assert_empty reaped.uniq - killed.map(&:process),
      "a reaper should recover only processes that were killed"
    # Every run but the last must have been in a server that was then killed before acknowledging it.
    unexplained = @records.duplicates.reject do |_, pids|
      (pids[0..-2] - killed.map(&:pid)).empty?
    end
    assert_empty unexplained,
      "a job may run twice only after a kill -9 of the server " \
        "that ran it first"
    killed.each do |kill|
      assert kill.seconds,
        "kill #{kill.number} (#{kill.process}) was never recovered"
      assert_operator kill.seconds, :<=, recovery_bound(kill),
        "kill #{kill.number}: jobs back too late"
    end
    statuses.each do |server, status|
      assert_equal 0, status,
        "a TERMed server should exit 0:\n#{server.log.lines.last(20).join}"
    end
    check_nothing_left
  end

  # After the servers stopped: no job queued, in flight, scheduled, retrying or dead, and no process registered.
  def check_nothing_left
    assert_equal({}, store.queue_sizes, "queues should be empty")
    assert_equal(
      {},
      @ids.values.compact.to_h { |id| [id, store.in_flight_count(id)] }
        .reject { |_, count| count.zero? },
      "no process should hold jobs in flight"
    )
    counts = store.counts
    dead = store.set_entries(:dead, limit: 5).map do |payload, _|
      JSON.parse(payload).values_at("args", "error_class", "error_message")
    end
    assert_equal 0, counts[:dead], "no job should be dead: #{dead.inspect}"
    assert_equal [0, 0], counts.values_at(:retry, :scheduled),
      "no job should be retrying or scheduled"
    assert_empty @store.registered,
      "every process should have left the registry"
  end

  # After a failure: the chaos timeline, and where the jobs that never ran are.
  def diagnose
    warn("chaos timeline (UTC):", *@events.map { |line| "  #{line}" })
    missing = @records.refresh.missing(@jobs)
    return if missing.empty?
    killed = (@watch&.kills || []).map(&:pid)
    processes = @ids.filter_map do |server, id|
      ["#{server.pid}#{" (killed)" if killed.include?(server.pid)}", id] if id
    end
    warn(
      "#{missing.size} jobs never ran: #{missing.first(20)}; " \
        "counts #{store.counts}",
      *@store.diagnose(missing, processes).map { |line| "  #{line}" }
    )
  rescue => error
    warn("could not diagnose: #{error.class}: #{error.message}")
  end

  def median(sorted)
    if sorted.empty?
      nil
    else
      (sorted[(sorted.size - 1) / 2] + sorted[sorted.size / 2]) / 2.0
    end
  end

  def seconds(value) = value ? format("%.2f s", value) : "-"
end

# frozen_string_literal: true

require_relative "../reliability/helper"
require "jiggler/cli"
require "jiggler/server/supervisor"
require "jiggler/web"
require "rack/mock"

module SupervisorTest
  # A logger that sends TERM to this process when the first server process has started: the supervisor must read it
  # before forking the next one.
  class TermOnFirstStart < Logger
    def info(message = nil, &block)
      if message.to_s.include?("started (1 of")
        Process.kill("TERM", Process.pid)
      end
      super
    end
  end
end

# `jiggler -p N`: real supervisor processes forking real servers, killed, stopped and signalled as in production, on
# each store (StoreTarget): the README makes the supervisor's promises for SQLite too.
StoreTarget.describe_each("jiggler -p (the supervisor)") do
  include ReliabilityHelper

  # The registry ids of the server processes a supervisor started, in order, from their start lines.
  def children(supervisor)
    supervisor.log.scan(/ started: (\S+),/).flatten
  end

  def child_pid(id) = Integer(id.split(":")[-2])

  def wait_for_children(supervisor, count)
    wait_for(
      timeout: 20,
      message: "#{count} server processes to start\n#{supervisor.log}"
    ) do
      children(supervisor).size >= count || !supervisor.running?
    end
    assert supervisor.running?, supervisor.log
    children(supervisor)
  end

  # Whether a process runs (a zombie, dead but not yet waited for, does not).
  def alive?(pid)
    !File.read("/proc/#{pid}/stat").rpartition(")").last.start_with?(" Z")
  rescue Errno::ENOENT, Errno::ESRCH
    false
  end

  def in_flight_count(id) = store.in_flight_count(id)

  def started_values = recorded.grep(/\Astart:/)

  it "replaces a server process killed with kill -9; its jobs run again " \
    "on a live one, nothing lost" do
    values = (1..4).map { |index| "s#{index}" }
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 3] })
    supervisor = start_reliable(
      "-p", "2", "-c", "2",
      recovery_timeout: 2,
      wait: false
    )
    ids = wait_for_children(supervisor, 2)
    wait_for(message: "every job to start") { started_values.size == 4 }
    victim = ids.max_by { |id| in_flight_count(id) }
    held = in_flight_count(victim)
    assert_operator held, :>=, 1

    Process.kill("KILL", child_pid(victim))
    replacement = wait_for_children(supervisor, 3).last
    refute_includes ids, replacement
    assert_match(
      /supervisor: process #{child_pid(victim)} died \(killed by SIGKILL\)/,
      supervisor.log
    )
    wait_for(timeout: 20, message: "every job to finish") do
      values.all? { |value| recorded_count("done:#{value}") >= 1 }
    end
    assert_equal 4 + held, started_values.size,
      "the victim's jobs ran again, the others once"
    wait_for(message: "the dead process to leave the registry") do
      Jiggler.summary["processes"].size == 2
    end
    assert_equal (ids - [victim] + [replacement]).sort,
      Jiggler.summary["processes"].keys.sort

    supervisor.signal("TERM")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    (ids + [replacement]).each do |id|
      refute alive?(child_pid(id)),
        "process #{child_pid(id)} should have exited"
    end
    assert_empty Jiggler.summary["processes"]
  end

  it "stops every server process on TERM during a burst, and loses no job" do
    count = 400
    Reliability::SleepJob.enqueue_bulk(
      (1..count).map { |index| ["b#{index}", 0.05] }
    )
    supervisor = start_reliable(
      "-p", "2", "-c", "5", "-t", "2",
      wait: false
    )
    ids = wait_for_children(supervisor, 2)
    wait_for(message: "the burst to be under way") do
      recorded_count_matching(/\Adone:/) >= 40
    end

    supervisor.signal("TERM")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    ids.each do |id|
      refute alive?(child_pid(id)),
        "process #{child_pid(id)} should have exited"
    end
    done = recorded.grep(/\Adone:/)
      .map { |entry| entry.delete_prefix("done:") }
      .uniq
    queued = store.queue_entries("default", limit: count)
      .map { |payload| JSON.parse(payload)["args"].first }
    assert_operator done.size, :<, count,
      "TERM should have come before the burst ended"
    assert_equal (1..count).map { |index| "b#{index}" }.sort,
      (done | queued).sort,
      "every job ran or is back in its queue"
    ids.each { |id| assert_equal 0, in_flight_count(id) }
    assert_empty Jiggler.summary["processes"]
  end

  it "passes TSTP and TTIN on to every server process, each shown " \
    "on the dashboard" do
    supervisor = start_reliable("-p", "2", wait: false)
    ids = wait_for_children(supervisor, 2)
    busy = Rack::MockRequest.new(Jiggler::Web.new).get("/busy").body
    ids.each do |id|
      assert_includes busy, id.split(":")[2],
        "the dashboard lists process #{child_pid(id)}"
    end
    supervisor.signal("TSTP")
    wait_for(message: "both processes to go quiet\n#{supervisor.log}") do
      log_lines(supervisor, /quiet: no new jobs/).size == 2
    end
    supervisor.signal("TTIN")
    wait_for(
      message: "both processes to dump their tasks\n#{supervisor.log}"
    ) { log_lines(supervisor, /INFO: tasks:/).size == 2 }
    assert_match(/supervisor: server processes \d+, \d+/, supervisor.log)
    supervisor.signal("INT")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
  end

  it "refuses a -p that is not a count from 1 to its maximum, " \
    "in one line naming the flag, before loading anything" do
    %w[99999999999999999999 abc 2.5 0 -3].each do |value|
      _, err = capture_io do
        assert_equal 1,
          Jiggler::CLI.run(["-p", value, "-r", ReliabilityHelper::FIXTURE])
      end
      assert_match(
        /\Ajiggler: -p #{Regexp.escape(value)}: (a number of server processes from 1 to|at most) \d+\b[^\n]+\n\z/,
        err
      )
    end
    max = Jiggler::Server::Supervisor.max
    assert_equal [4 * Etc.nprocessors, 16].max, max
    [max + 1, 99999999999999999999].each do |value|
      _, err = capture_io do
        assert_equal 1,
          Jiggler::CLI.run(["-p", value.to_s, "-r", "nowhere.rb"])
      end
      assert_equal "jiggler: -p #{value}: at most #{max} server processes " \
        "on this machine (4 per core, at least 16); " \
        "for more jobs at once, raise -c\n", err
    end
    config_file = File.join(@dir, "jiggler.yml").tap do |path|
      File.write(path, "processes: #{max + 1}\n")
    end
    _, err = capture_io do
      assert_equal 1,
        Jiggler::CLI.run(["-C", config_file, "-r", ReliabilityHelper::FIXTURE])
    end
    assert_match(
      /\Ajiggler: config\[:processes\] #{max + 1}: at most #{max} server processes/,
      err
    )
    assert_equal Etc.nprocessors, Jiggler::Server::Supervisor.count("auto")
  end

  it "reads TERM while it forks: it forks no more, and stops the server " \
    "processes it started" do
    log = StringIO.new
    supervisor = Jiggler::Server::Supervisor.new(
      count: 8,
      stop_timeout: 5,
      config: Jiggler.config,
      logger: SupervisorTest::TermOnFirstStart.new(log)
    )
    started = now
    status = supervisor.run do |_identity|
      sleep 30
      0
    end
    pids = log.string.scan(/process (\d+) started/).flatten.map(&:to_i)
    assert_equal [0, 1], [status, pids.size], log.string
    assert_operator now - started, :<, 5, "it stopped at once"
    pids.each do |pid|
      refute alive?(pid), "process #{pid} should have exited"
    end
    assert_match(/supervisor: TERM, stopping 1 server processes/, log.string)
  end

  it "does not replace a server process stopped through the store " \
    "(jiggler stop), and exits when the last one is" do
    supervisor = start_reliable("-p", "2", recovery_timeout: 2, wait: false)
    ids = wait_for_children(supervisor, 2)
    store.signal_process(ids.first, "stop")
    wait_for(message: "the first to stop on request\n#{supervisor.log}") do
      supervisor.log.include?(
        "process #{child_pid(ids.first)} stopped on request"
      )
    end
    refute alive?(child_pid(ids.first))
    store.signal_process(ids.last, "stop")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    assert_equal ids, children(supervisor),
      "no server process was started in their place"
    assert_empty Jiggler.summary["processes"]
  end

  it "logs and ignores HUP, USR1 and USR2, as its server processes do: " \
    "nothing dies, nothing is orphaned" do
    supervisor = start_reliable("-p", "2", wait: false)
    ids = wait_for_children(supervisor, 2)
    %w[HUP USR1 USR2].each do |signal|
      [supervisor.pid, *ids.map { |id| child_pid(id) }].each do |pid|
        Process.kill(signal, pid)
      end
      wait_for(message: "SIG#{signal} logged 3 times\n#{supervisor.log}") do
        log_lines(supervisor, /SIG#{signal} ignored/).size == 3
      end
    end
    assert supervisor.running?, supervisor.log
    assert_equal ids, children(supervisor), "no server process died"
    supervisor.signal("TERM")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    ids.each do |id|
      refute alive?(child_pid(id)),
        "process #{child_pid(id)} should have exited"
    end
  end

  it "its server processes stop by themselves when the supervisor is " \
    "killed with kill -9" do
    supervisor = start_reliable("-p", "2", "-t", "1", wait: false)
    ids = wait_for_children(supervisor, 2)
    supervisor.signal("KILL")
    supervisor.wait(timeout: 5)
    wait_for(
      message: "the orphaned server processes to exit\n#{supervisor.log}"
    ) { ids.none? { |id| alive?(child_pid(id)) } }
    assert_equal 2,
      log_lines(supervisor, /the supervisor is gone; stopping/).size,
      supervisor.log
    assert_empty Jiggler.summary["processes"],
      "each stopped cleanly and unregistered"
  end

  def recorded_count_matching(pattern) = recorded.grep(pattern).size
end

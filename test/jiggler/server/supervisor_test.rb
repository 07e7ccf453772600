# frozen_string_literal: true

require_relative "../reliability/helper"
require "jiggler/cli"
require "jiggler/server/supervisor"
require "jiggler/web"
require "rack/mock"

# `jiggler -p N`: real supervisor processes forking real servers, killed, stopped and signalled as in production.
describe "jiggler -p (the supervisor)" do
  include ReliabilityHelper

  # The registry ids of the server processes a supervisor started, in order, from their start lines.
  def children(supervisor) = supervisor.log.scan(/ started: (\S+),/).flatten

  def child_pid(id) = Integer(id.split(":")[-2])

  def wait_for_children(supervisor, count)
    wait_for(timeout: 20, message: "#{count} server processes to start\n#{supervisor.log}") do
      children(supervisor).size >= count || !supervisor.running?
    end
    assert supervisor.running?, supervisor.log
    children(supervisor)
  end

  def alive?(pid)
    Process.kill(0, pid)
    true
  rescue Errno::ESRCH
    false
  end

  def in_flight_count(id) = redis.call("HLEN", "{#{@namespace}}:in_flight:#{id}")

  def started_values = recorded.grep(/\Astart:/)

  it "replaces a server process killed with kill -9; its jobs run again on a live one, nothing lost" do
    values = (1..4).map { |index| "s#{index}" }
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 3] })
    supervisor = start_reliable("-p", "2", "-c", "2", recovery_timeout: 2, wait: false)
    ids = wait_for_children(supervisor, 2)
    wait_for(message: "every job to start") { started_values.size == 4 }
    victim = ids.max_by { |id| in_flight_count(id) }
    held = in_flight_count(victim)
    assert_operator held, :>=, 1

    Process.kill("KILL", child_pid(victim))
    replacement = wait_for_children(supervisor, 3).last
    refute_includes ids, replacement
    assert_match(/supervisor: process #{child_pid(victim)} died \(killed by SIGKILL\)/, supervisor.log)
    wait_for(timeout: 20, message: "every job to finish") { values.all? { |value| recorded_count("done:#{value}") >= 1 } }
    assert_equal 4 + held, started_values.size, "the victim's jobs ran again, the others once"
    wait_for(message: "the dead process to leave the registry") { Jiggler.summary["processes"].size == 2 }
    assert_equal (ids - [victim] + [replacement]).sort, Jiggler.summary["processes"].keys.sort

    supervisor.signal("TERM")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    (ids + [replacement]).each { |id| refute alive?(child_pid(id)), "process #{child_pid(id)} should have exited" }
    assert_empty Jiggler.summary["processes"]
  end

  it "stops every server process on TERM during a burst, and loses no job" do
    count = 400
    Reliability::SleepJob.enqueue_bulk((1..count).map { |index| ["b#{index}", 0.05] })
    supervisor = start_reliable("-p", "2", "-c", "5", "-t", "2", wait: false)
    ids = wait_for_children(supervisor, 2)
    wait_for(message: "the burst to be under way") { recorded_count_matching(/\Adone:/) >= 40 }

    supervisor.signal("TERM")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
    ids.each { |id| refute alive?(child_pid(id)), "process #{child_pid(id)} should have exited" }
    done = recorded.grep(/\Adone:/).map { |entry| entry.delete_prefix("done:") }.uniq
    queued = store.queue_entries("default", limit: count).map { |payload| JSON.parse(payload)["args"].first }
    assert_operator done.size, :<, count, "TERM should have come before the burst ended"
    assert_equal (1..count).map { |index| "b#{index}" }.sort, (done | queued).sort, "every job ran or is back in its queue"
    ids.each { |id| assert_equal 0, in_flight_count(id) }
    assert_empty Jiggler.summary["processes"]
  end

  it "passes TSTP and TTIN on to every server process, each shown on the dashboard" do
    supervisor = start_reliable("-p", "2", wait: false)
    ids = wait_for_children(supervisor, 2)
    busy = Rack::MockRequest.new(Jiggler::Web.new).get("/busy").body
    ids.each { |id| assert_includes busy, id.split(":")[2], "the dashboard lists process #{child_pid(id)}" }
    supervisor.signal("TSTP")
    wait_for(message: "both processes to go quiet\n#{supervisor.log}") { log_lines(supervisor, /quiet: no new jobs/).size == 2 }
    supervisor.signal("TTIN")
    wait_for(message: "both processes to dump their tasks\n#{supervisor.log}") { log_lines(supervisor, /INFO: tasks:/).size == 2 }
    assert_match(/supervisor: server processes \d+, \d+/, supervisor.log)
    supervisor.signal("INT")
    assert_equal 0, supervisor.wait(timeout: 15), supervisor.log
  end

  it "refuses a processes setting that is not a count or auto, in one line" do
    _, err = capture_io { assert_equal 1, Jiggler::CLI.run(["-p", "0", "-r", "./test/fixtures/reliability_jobs.rb"]) }
    assert_equal "jiggler: config[:processes] must be a positive Integer or \"auto\" (one per core) (got 0)\n", err
    assert_equal "auto", Jiggler::Config::Rules.check(:processes, :auto)
    assert_equal Etc.nprocessors, Jiggler::Server::Supervisor.count("auto")
  end

  def recorded_count_matching(pattern) = recorded.grep(pattern).size
end

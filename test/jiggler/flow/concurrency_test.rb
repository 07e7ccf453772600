# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Concurrency limits run by real servers: a limit of 2 over 200 jobs of 100 ms never has a third running, across two
# servers of 10 workers, while jobs of another class in the same queue keep flowing; a killed server's slots come back.
describe "concurrency limits" do
  include FlowServers

  def start(env = {}) = start_flow(@env.merge(env))

  def lines = File.exist?(@record) ? File.readlines(@record).map(&:split) : []

  # The most jobs running at once, from the records' start and end times.
  def most_at_once(records)
    events = records.filter_map { |event, _, at| [at.to_f, (event == "start") ? 1 : -1] if event != "other" }
    running = 0
    events.sort_by { |at, change| [at, change] }.map { |_, change| running += change }.max
  end

  def assert_limit_holds(store)
    2.times { start }
    TwoAtOnceJob.enqueue_bulk(Array.new(200) { [0.1] })
    OtherJob.enqueue_bulk(Array.new(50) { [] })
    wait_for(timeout: 20, message: "the other jobs to run") { lines.count { |event, *| event == "other" } == 50 }
    done_then = lines.count { |event, *| event == "end" }
    assert_operator done_then, :<, 150, "the other class ran while the limited jobs still waited"
    wait_for(timeout: 40, message: "200 limited jobs to end") { lines.count { |event, *| event == "end" } == 200 }
    assert_equal 2, most_at_once(lines), File.read(@record).lines.reject { |line| line.start_with?("other") }.sort_by { |line| line.split.last.to_f }.join
    assert_equal({}, store.waiting_counts)
  end

  it "never runs a third job of the key, on Redis, while others flow" do
    @env = {}
    assert_limit_holds(store)
  end

  it "never runs a third job of the key, on SQLite, while others flow" do
    @env = sqlite_env
    assert_limit_holds(@sqlite)
  end

  it "gets the slots of a server killed -9 back within recovery_timeout" do
    @env = {"FLOW_RECOVERY_TIMEOUT" => "2"}
    doomed = start
    TwoAtOnceJob.enqueue_bulk([[30], [30], [0.1], [0.1]])
    wait_for(message: "two jobs to start and two to wait") { lines.count { |event, *| event == "start" } == 2 && store.waiting_counts["default"] == 2 }
    doomed.signal("KILL")
    killed = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # The killed server held both long jobs: they come back as suspects, and each runs alone in its process (see the
    # README's poison jobs), so a third server is the one free to run the jobs that waited for their slots.
    3.times { start({"FLOW_RECOVERY_TIMEOUT" => "2"}) }
    wait_for(timeout: 20, message: "the waiting jobs to run") { lines.count { |event, *| event == "end" } >= 2 }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - killed, :<, 2 + 8
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Concurrency limits run by real servers: a limit of 2 over 200 jobs of 100 ms never has a third running, across two
# servers of 10 workers, while jobs of another class in the same queue keep flowing; a slot whose ttl is over goes to
# the job that waits; a killed server's slots come back.
# On each store.
StoreTarget.describe_each("concurrency limits") do
  include FlowServers

  # Starts a server on the test's store; the first call points the test's client at it too.
  def start(env = {}) = start_flow(target_env.merge(env))

  def lines = File.exist?(@record) ? File.readlines(@record).map(&:split) : []

  # The most jobs running at once, from the records' start and end times.
  def most_at_once(records)
    events = records.filter_map do |event, _, at|
      [at.to_f, (event == "start") ? 1 : -1] if event != "other"
    end
    running = 0
    events.sort_by { |at, change| [at, change] }
      .map { |_, change| running += change }.max
  end

  it "never runs a third job of the key while others flow" do
    2.times { start }
    TwoAtOnceJob.enqueue_bulk(Array.new(200) { [0.1] })
    OtherJob.enqueue_bulk(Array.new(50) { [] })
    wait_for(timeout: 20, message: "the other jobs to run") do
      lines.count { |event, *| event == "other" } == 50
    end
    done_then = lines.count { |event, *| event == "end" }
    assert_operator done_then, :<, 150,
      "the other class ran while the limited jobs still waited"
    wait_for(timeout: 40, message: "200 limited jobs to end") do
      lines.count { |event, *| event == "end" } == 200
    end
    assert_equal 2, most_at_once(lines),
      File.read(@record).lines
        .reject { |line| line.start_with?("other") }
        .sort_by { |line| line.split.last.to_f }
        .join
    assert_equal({}, target_store.waiting_counts)
  end

  # The ttl is the safety net for a holder that never gives its slot back: the server's limiter loop frees the slot once
  # the ttl is over, and the job that waited runs.
  it "runs a waiting job once the slot's ttl is over, " \
    "though its holder still runs" do
    start({"FLOW_POLL_INTERVAL" => "0.5"})
    ShortSlotJob.enqueue_bulk([[10], [10]])
    wait_for(timeout: 10, message: "the second job to start") do
      lines.count { |event, *| event == "start" } == 2
    end
    first, second = lines.select { |event, *| event == "start" }
      .map { |_, _, at| at.to_f }
    assert_empty lines.select { |event, *| event == "end" },
      "the second job started while the first ran"
    assert_operator second - first, :>=, 1, "not before the ttl was over"
  end

  it "gets the slots of a server killed -9 back within recovery_timeout" do
    # On the doomed server every job takes 30 s, so it dies holding both slots, whichever two jobs took them.
    doomed = start({"FLOW_RECOVERY_TIMEOUT" => "2", "FLOW_SLOW" => "1"})
    TwoAtOnceJob.enqueue_bulk(Array.new(4) { [0.1] })
    wait_for(message: "two jobs to start and two to wait") do
      lines.count { |event, *| event == "start" } == 2 &&
        target_store.waiting_counts["default"] == 2
    end
    # Live before the kill: their reapers find the death, they run the jobs.
    3.times { start({"FLOW_RECOVERY_TIMEOUT" => "2"}) }
    doomed.signal("KILL")
    killed = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # The two jobs of the killed server come back, each with its slot (see docs/reliability.md, "Jobs that kill their
    # process"); when they end, their slots go to the jobs that waited.
    wait_for(timeout: 20, message: "all four jobs to end") do
      lines.count { |event, *| event == "end" } == 4
    end
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - killed
    puts format(
      "\nslots of a server killed -9 (%s, recovery_timeout 2 s): " \
        "all four jobs ended %.2f s after the kill",
      target_name, took
    )
    assert_operator took, :<, 2 + 0.1 + 0.1 + 0.5,
      "recovery_timeout, then two rounds of 0.1 s jobs"
    assert_equal({}, target_store.waiting_counts)
  end
end

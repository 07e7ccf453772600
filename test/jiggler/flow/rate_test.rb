# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Rate limits run by real servers: 50 starts a second over 500 jobs, across two servers, take about 10 s and never
# exceed the budget in any second (calendar seconds and sliding windows).
StoreTarget.describe_each("rate limits") do
  include FlowServers

  def starts = File.exist?(@record) ? File.readlines(@record).map { |line| line.split.last.to_f } : []

  it "starts at most 50 jobs a second" do
    env = target_env
    2.times { start_flow(env) }
    FiftyPerSecondJob.enqueue_bulk(Array.new(500) { |n| [n] })
    wait_for(timeout: 40, message: "500 jobs to start") { starts.size == 500 }
    times = starts.sort
    assert_operator times.map(&:floor).tally.values.max, :<=, 50, "a calendar second over the budget"
    # The budget holds for the times the gate admits jobs; a job records its start when perform begins, a few ms
    # later and by a varying lag, so sliding windows are checked 50 ms short of a second.
    assert_operator times.each_with_index.map { |at, index| times[index...].take_while { |later| later < at + 0.95 }.size }.max, :<=, 50,
      "a sliding second over the budget"
    assert_in_delta 9.5, times.last - times.first, 1.5, "500 starts at 50 a second"
    sleep 0.5 # a job started twice would show here
    assert_equal (0...500).map { |n| "rate:#{n}" }, File.readlines(@record).map { |line| line.split.first }.sort_by { |name| name[/\d+/].to_i },
      "each job started once"
  end
end

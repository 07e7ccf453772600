# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Rate limits run by real servers: 50 starts a second over 500 jobs, across two servers, take about 10 s and never
# exceed the budget in any second (calendar seconds and sliding windows). The budget is checked on the starts the
# store granted, read while the servers run (each stays in the store for its period): a job's own record of when its
# perform began comes later, by a lag a loaded machine stretches, and tells only that each job ran once.
StoreTarget.describe_each("rate limits") do
  include FlowServers

  def performed
    if File.exist?(@record)
      File.readlines(@record).map { |line| line.split.first }
    else
      []
    end
  end

  it "starts at most 50 jobs a second" do
    env = target_env
    target = StoreTarget.build(target_name, namespace: @namespace, dir: @dir)
    2.times { start_flow(env) }
    FiftyPerSecondJob.enqueue_bulk(Array.new(500) { |n| [n] })
    granted = {}
    wait_for(timeout: 40, message: "500 jobs to start") do
      granted.merge!(target.rate_starts(target_store))
      performed.size == 500
    end
    # Once more: the last starts may have been granted, and their jobs performed, after the read in the last poll.
    # They stay in the store for their period, and no job is left to start and trim them.
    granted.merge!(target.rate_starts(target_store))
    times = granted.values.sort
    assert_equal 500, granted.size, "one granted start a job"
    assert_operator times.map(&:floor).tally.values.max, :<=, 50,
      "a calendar second over the budget"
    busiest = times.each_index.map do |index|
      times[index...].take_while { |later| later < times[index] + 1 }
    end.max_by(&:size)
    assert_operator busiest.size, :<=, 50, format(
      "a sliding second over the budget: from %.6f to %.6f",
      busiest.first, busiest.last
    )
    assert_in_delta 9.5, times.last - times.first, 1.5,
      "500 starts at 50 a second"
    sleep 0.5 # a job started twice would show here
    assert_equal (0...500).map { |n| "rate:#{n}" },
      performed.sort_by { |name| name[/\d+/].to_i }, "each job started once"
  ensure
    target&.close
  end
end

# frozen_string_literal: true

require_relative "../reliability/helper"

# Prefetch (taking jobs ahead of free workers) keeps short jobs flowing without a round trip between them, and must
# not hoard long ones: a job held behind a busy worker is a job another process could have started.
StoreTarget.describe_each("prefetch across processes") do
  include ReliabilityHelper

  # Start times of the jobs, from the record, in seconds after the first.
  def start_offsets
    starts = records.filter_map do |value, _, at|
      at if value.start_with?("start:")
    end
    starts.map { |at| at - starts.min }
  end

  it "runs 40 jobs of 3 s on -p 2 -c 10 in two rounds: " \
    "no process holds jobs it cannot start" do
    values = (1..40).map { |index| "long#{index}" }
    Reliability::SleepJob.enqueue_bulk(values.map { |value| [value, 3] })
    start_reliable("-p", "2", "-c", "10", wait: false)
    wait_for(timeout: 30, message: "every job to finish") do
      values.all? { |value| recorded_count("done:#{value}") == 1 }
    end

    offsets = start_offsets
    rounds = offsets.map { |offset| (offset / 3).floor }.uniq.size
    puts format(
      "\n40 jobs of 3 s on -p 2 -c 10 (%s): %d rounds, " \
      "last start %.1f s after the first",
      target_name,
      rounds,
      offsets.max
    )
    assert_equal 40, offsets.size, "each job ran once"
    assert_operator offsets.max, :<, 4.5,
      "the second round should start as the first ends, on both processes"
  end
end

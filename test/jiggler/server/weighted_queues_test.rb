# frozen_string_literal: true

require_relative "../reliability/helper"
require "jiggler/cli"

# `jiggler -w queue,weight`: a real server working queues by weight, each queue's share of the jobs it ran.
StoreTarget.describe_each("weighted queues") do
  include ReliabilityHelper

  def weights = {"wa" => 6, "wb" => 3, "wc" => 1}

  it "gives each queue its share of 10,000 jobs while all hold work, " \
    "and starves none" do
    weights.each_key do |queue|
      Reliability::RecordJob.with_options(queue: queue)
        .enqueue_bulk(Array.new(6_000) { |index| ["#{queue}-#{index}"] })
    end
    server = start_reliable(
      "-c", "10",
      *weights.flat_map { |queue, weight| ["-w", "#{queue},#{weight}"] }
    )
    assert_match(/queues by weight wa\(6\), wb\(3\), wc\(1\)/, server.log)
    wait_for(timeout: 60, message: "10,000 jobs to run") do
      recorded.size >= 10_000
    end
    # every queue still holds jobs: what ran so far shows the shares
    server.signal(:KILL)

    ran = recorded.first(10_000).map { |entry| entry[/\Arun:(\w+)-/, 1] }.tally
    shares = weights.keys.to_h do |queue|
      [queue, ran.fetch(queue, 0) / 10_000.0]
    end
    puts format(
      "\nweighted queues on %s, weights 6/3/1, shares of 10,000 jobs: %s",
      target_name,
      shares.map { |queue, share| format("%s %.1f%%", queue, share * 100) }
        .join(", ")
    )
    weights.each do |queue, weight|
      assert_in_delta weight / 10.0, shares[queue], 0.06, "#{queue}'s share"
    end
  end
end

describe "jiggler -w (the flag)" do
  def refused(*argv)
    status = nil
    _, err = capture_io do
      status = Jiggler::CLI.run(
        [*argv, "-r", "./test/fixtures/reliability_jobs.rb"]
      )
    end
    assert_equal 1, status
    err
  end

  it "says what it takes, and that -q and -w do not mix" do
    assert_match(
      /\A.*-w critical: .*positive Integer weight.*; e\.g\. -w critical,6$/,
      refused("-w", "critical")
    )
    assert_match(/-w critical,0: /, refused("-w", "critical,0"))
    assert_match(
      /set queues \(strict priority\) or weighted_queues \(a share each\), not both/,
      refused("-q", "default", "-w", "critical,2")
    )
  end
end

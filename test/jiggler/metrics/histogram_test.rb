# frozen_string_literal: true

require "test_helper"
require "jiggler/metrics/histogram"
require "jiggler/metrics/recorder"

describe Jiggler::Metrics::Histogram do
  histogram = Jiggler::Metrics::Histogram

  it "puts each duration in the bucket whose bounds hold it, " \
    "the longest in the last" do
    [
      0.0, 0.00005, 0.0001, 0.00011, 0.01, 0.05, 0.2, 3.3, 104.0
    ].each do |seconds|
      index = histogram.index(seconds)
      assert_operator seconds, :<=, histogram::BOUNDS[index] + 1e-12
      if index.positive?
        assert_operator seconds, :>, histogram::BOUNDS[index - 1]
      end
    end
    assert_equal histogram::LAST, histogram.index(500.0)
  end

  it "reads percentiles within 5% of durations that all fall in one bucket" do
    [0.0003, 0.01, 0.05, 0.2, 7.0].each do |seconds|
      counts = Hash.new(0)
      100.times { counts[histogram.index(seconds * (1 + rand * 0.01))] += 1 }
      assert_in_delta seconds, histogram.percentile(counts, 0.5), seconds * 0.05
    end
  end

  it "reads each percentile from the runs below it" do
    counts = Hash.new(0)
    90.times { counts[histogram.index(0.01)] += 1 }
    10.times { counts[histogram.index(1.0)] += 1 }
    assert_in_delta 0.01, histogram.percentile(counts, 0.5), 0.001
    # inside the bucket that holds 1.0, about 9% wide
    assert_in_delta 1.0, histogram.percentile(counts, 0.99), 0.1
    assert_nil histogram.percentile({}, 0.5)
    assert_equal histogram::BOUNDS.last,
      histogram.percentile({histogram::LAST => 3}, 0.5)
  end
end

describe Jiggler::Metrics::Recorder do
  it "counts runs by class until handed over and taken, " \
    "and takes back counts that could not be written" do
    recorder = Jiggler::Metrics::Recorder.new
    recorder.record("A", 0.01, false)
    recorder.record("A", 0.02, true)
    recorder.record("B", 0.5, false)
    assert_empty recorder.take, "nothing is taken before it is handed over"
    recorder.hand_over
    taken = Thread.new { recorder.take }.value # the heartbeat thread takes
    assert_equal [1, 1, 30_000], taken["A"].to_a.first(3)
    assert_equal 2, taken["A"].buckets.values.sum
    assert_equal({Jiggler::Metrics::Histogram.index(0.5) => 1},
      taken["B"].buckets)
    assert_empty recorder.take
    recorder.record("A", 0.01, false)
    recorder.hand_over
    recorder.restore(taken)
    assert_equal [2, 1, 40_000], recorder.take["A"].to_a.first(3)
  end
end

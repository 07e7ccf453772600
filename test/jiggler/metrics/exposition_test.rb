# frozen_string_literal: true

require "test_helper"
require "jiggler/metrics/exposition"
require "jiggler/metrics/recorder"
require "support/promtool"

describe Jiggler::Metrics::Exposition do
  include Promtool

  def stats(queues: [])
    {
      "processed" => 7,
      "failures" => 2,
      "enqueued" => 3,
      "busy" => 1,
      "processes" => 1,
      "scheduled" => 0,
      "retry" => 2,
      "dead" => 0,
      "queues" => queues
    }
  end

  it "writes what Prometheus' parser accepts, " \
    "with odd names escaped in labels" do
    recorder = Jiggler::Metrics::Recorder.new
    [0.00005, 0.003, 0.003, 0.2, 300.0].each do |seconds|
      recorder.record(%(Odd"Name\\With\nBreaks), seconds, false)
    end
    queues = [
      {"name" => "a\"b", "size" => 3, "latency" => 1.25, "paused" => true}
    ]
    recorder.hand_over
    text = Jiggler::Metrics::Exposition
      .new(stats(queues: queues), recorder.take)
      .to_s
    assert_valid_exposition(text)
    values = samples(text)
    label = %(class="Odd\\"Name\\\\With\\nBreaks")
    assert_equal 5, values[%(jiggler_job_duration_seconds_count{#{label}})]
    assert_equal 1,
      values[%(jiggler_job_duration_seconds_bucket{#{label},le="0.0001"})]
    assert_equal 3,
      values[%(jiggler_job_duration_seconds_bucket{#{label},le="0.0032"})]
    assert_equal 4,
      values[%(jiggler_job_duration_seconds_bucket{#{label},le="104.8576"})]
    assert_equal 5,
      values[%(jiggler_job_duration_seconds_bucket{#{label},le="+Inf"})]
    assert_in_delta 300.20605,
      values[%(jiggler_job_duration_seconds_sum{#{label}})], 1e-6
    assert_equal 1.25, values[%(jiggler_queue_latency_seconds{queue="a\\"b"})]
  end

  it "writes every family, with no samples where nothing ran" do
    text = Jiggler::Metrics::Exposition.new(stats, {}).to_s
    assert_valid_exposition(text)
    assert_equal [7, 2, 2],
      samples(text).values_at(
        "jiggler_processed_total", "jiggler_failed_total", "jiggler_retry_jobs"
      )
  end
end

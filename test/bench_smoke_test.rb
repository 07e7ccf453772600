# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"
require "timeout"

# Runs the benchmarks with --quick so that their harnesses cannot rot: each must finish and print its table.
describe "bench/job_queue.rb --quick" do
  it "prints jobq's table rows for the baselines, both durable files " \
    "and :memory:, and the end-to-end throughput" do
    env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => nil}
    output, status = Timeout.timeout(90) do
      Open3.capture2e(
        env,
        RbConfig.ruby,
        File.join(ServerProcess::ROOT, "bench", "job_queue.rb"),
        "--quick",
        chdir: ServerProcess::ROOT
      )
    end
    assert status.success?, "the benchmark failed:\n#{output}"

    assert_match(
      /^Ran 'naive_serialize' \d+ times, total time [\d.]+ (s|ms|us|ns)$/,
      output
    )
    assert_match(/^Ran 'naive_fsync' \d+ times/, output)
    sections = output.split(/^Testing with /).drop(1)
    assert_equal 3, sections.size,
      "a durable file with NORMAL, one with FULL, and :memory:\n#{output}"
    assert_match(/\A\S+ \(WAL, synchronous NORMAL\)/, sections[0])
    assert_match(/\A\S+ \(WAL, synchronous FULL\)/, sections[1])
    assert_match(/\A:memory:/, sections[2])
    sections.each do |section|
      %w[insert poll append_event].each do |name|
        assert_match(
          /^Ran '#{name}' \d+ times, total time [\d.]+ (s|ms|us|ns)\n  \
mean: [\d.]+ (s|ms|us|ns)\n  median: [\d.]+ (s|ms|us|ns)\n  \
stddev: [\d.e-]+ (s|ms|us|ns)\n  test overhead: [\d.e-]+ (s|ms|us|ns)\n  \
jobq: mean [\d.]+ (ms|us), median/,
          section,
          "the #{name} row"
        )
      end
    end
    assert_match(
      /^  insert +[\d.]+ (ms|us) \([\d.]+ (ms|us)\)/,
      output,
      "the summary table"
    )
    assert_match(
      /^  run 1: enqueued in [\d.]+ s .* jobs processed in [\d.]+ s: \d+ jobs\/s/,
      output
    )
    assert_match(/^  noop throughput: median \d+ jobs\/s/, output)
  end
end

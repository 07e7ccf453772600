# frozen_string_literal: true

require "test_helper"
require "open3"
require "timeout"

# Keeps bin/bench from rotting: a --quick run of our jiggler alone (no competitor bundle, no network) must run every
# workload and print every table.
describe "bin/bench --quick --only jiggler" do
  it "prints the table of every workload in the seed's format" do
    root = File.expand_path("../..", __dir__)
    env = {
      "REDIS_URL" => nil,
      "JIGGLER_SQLITE_PATH" => nil,
      "RUBY_YJIT_ENABLE" => nil
    }
    output, status = Timeout.timeout(120) do
      Open3.capture2e(
        env, File.join(root, "bin", "bench"), "--quick", "--only", "jiggler",
        chdir: root
      )
    end

    assert status.success?, output
    refute_match(/skipping jiggler\b/, output)
    row = /^\| Jiggler [^|]+ \| 10 \| 2_000 \| [\d.]+ sec \| [\d_]+ kb \| \
[\d_]+ kb \| [\d.]+ \| [\d_]+ \| [\d.]+ sec \| [\d_]+ \|  \|$/
    assert_match(row, output, "the noop row")
    [
      "Noop:", "Enqueue speed", "Latency:", "SQLite store: noop",
      "SQLite store: latency", "HTTP:", "File IO:", "CPU:", "Idle:",
      "HTTP from idle:", "Stream:", "Long jobs:"
    ].each do |title|
      assert_match(/^#### #{Regexp.escape(title)}/, output)
    end
    assert_match(
      /^\| Jiggler [^|]+ \| 1000 \| 200 \| [\d.]+ sec \| 0\.04 sec \|/,
      output,
      "the HTTP row at concurrency 1000 with its ideal time"
    )
    assert_match(
      /^\| Bare Async loop \| 1000 \| 200 \| [\d.]+ sec \| 0\.04 sec \|/,
      output,
      "the bare loop's HTTP row, the reference"
    )
    assert_match(
      /^Targets: Jiggler [^|]+ at concurrency 1000: [\d.]+ s vs the bare loop's [\d.]+ s = [\d.]+x/,
      output
    )
    assert_match(
      /^\| Jiggler [^|]+ \| 10 \| 20 \| [\d.]+ ms \| [\d.]+ ms \| [\d.]+ ms \|$/,
      output,
      "the latency row"
    )
    assert_match(
      /^\| Jiggler [^|]+ \| 10 \| [\d_]+ kb \| [\d_]+ kb \| [\d.]+ \| [\d.]+ \|$/,
      output,
      "the idle row"
    )
    assert_match(
      /^Ours over the bare loop: c100: [\d.]+ sec \/ [\d.]+ sec = [\d.]+x/,
      output
    )
    assert_match(
      /^\| Jiggler [^|]+ \| 500\/s \| 200 \| [\d_]+\/s \| [\d.]+ ms \| [\d.]+ ms \|/,
      output,
      "the stream row"
    )
    assert_match(
      /^\| Jiggler [^|]+ -p 2 \| 40 \| \d+ \| 2 \| [\d.]+ sec \| 0\.60 sec \|$/,
      output,
      "the long-p2 row"
    )
    assert_match(/^Results: /, output)
  end
end

describe "bin/bench --quick --processes 1,2" do
  it "runs ours as jiggler -p N and counts the jobs of every process" do
    root = File.expand_path("../..", __dir__)
    env = {
      "REDIS_URL" => nil,
      "JIGGLER_SQLITE_PATH" => nil,
      "RUBY_YJIT_ENABLE" => nil
    }
    output, status = Timeout.timeout(120) do
      Open3.capture2e(
        env, File.join(root, "bin", "bench"), "--quick", "--only", "jiggler",
        "--workloads", "noop", "--processes", "1,2", chdir: root
      )
    end

    assert status.success?, output
    [1, 2].each do |count|
      assert_match(
        /^\| Jiggler [^|]+ -p #{count} \| 10 \| 2_000 \| [\d.]+ sec \|/,
        output,
        "the noop row with -p #{count}"
      )
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"

# Keeps bench/flow_cost.rb from rotting: a --quick run must print a row per class on each store.
describe "bench/flow_cost.rb" do
  it "prints the cost of each flow-control option on both stores " \
    "in a quick run" do
    root = File.expand_path("../..", __dir__)
    output, status = Open3.capture2e(
      RbConfig.ruby, "bench/flow_cost.rb", "--quick", chdir: root
    )

    assert status.success?, output
    rows = output.lines.grep(/^\| (redis|sqlite) \|/)
    assert_equal(
      %w[redis sqlite].product(
        ["plain", "unique until finished", "concurrency limit", "rate limit"]
      ),
      rows.map { |row| row.split("|").map(&:strip)[1, 2] }
    )
    assert(
      rows.all? do |row|
        row.match?(/\| \d+\.\d \| \d+\.\d \| \d+\.\d \| (-|\+-?\d+\.\d µs \(x\d+\.\d\)) \|$/)
      end,
      output
    )
  end
end

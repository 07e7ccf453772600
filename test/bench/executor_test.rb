# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"

# Keeps bench/executor.rb from rotting: a --quick run must print every chart.
describe "bench/executor.rb" do
  it "prints the charts and the submit! rates in a quick run" do
    root = File.expand_path("../..", __dir__)
    output, status = Open3.capture2e(
      RbConfig.ruby, "-w", "bench/executor.rb", "--quick", chdir: root
    )

    assert status.success?, output
    refute_match(/warning|Error/, output)
    [
      "CPU-intensive task",
      "executor = Jiggler::Executor.batch_size(100)",
      "Direct I/O on a single disk"
    ].each do |title|
      assert_includes output, title
    end
    assert_match(/^loop +: \*+ +\d+\.\d{3} s$/, output)
    assert_match(
      /^Jiggler::Executor\.threads\(8\)\.queues\(4\)\.batch\(true\)\.new : \*+ +\d+\.\d{3} s$/,
      output
    )
    assert_match(/^executor\.threads\(2\)\.queues\(1\)\.new +: \*+/, output)
    assert_match(
      /^Jiggler::Executor\.batch\(true\)\.new +: +\d+ items\/s submitted, +\d+ items\/s processed$/,
      output
    )
    assert_equal 3 * 15 + 4, output.lines.grep(/ : /).size
  end
end

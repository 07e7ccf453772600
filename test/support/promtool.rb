# frozen_string_literal: true

require "open3"

# Prometheus' own parser of the text exposition format, through `promtool check metrics` (from Debian's prometheus
# package: bin/test unpacks its promtool into tmp/promtool when none is installed).
module Promtool
  UNPACKED = File.expand_path("../../tmp/promtool/usr/bin/promtool", __dir__)

  # The promtool to run, or nil.
  def self.path
    [
      ENV["JIGGLER_PROMTOOL"],
      UNPACKED,
      *ENV["PATH"].to_s.split(File::PATH_SEPARATOR)
        .map { |dir| File.join(dir, "promtool") }
    ].compact.find { |path| File.executable?(path) }
  end

  MISSING = "promtool is missing: run bin/test, which unpacks it"

  # Checks an exposition with promtool, failing the test with what promtool said. Without promtool, on CI (CI set)
  # the test fails; elsewhere only this check waits: the test's other assertions still run, and a test that passed
  # them is reported skipped at its end (see `after_teardown`), so a missing promtool never hides another failure.
  def assert_valid_exposition(text)
    promtool = Promtool.path
    unless promtool
      flunk(MISSING) if ENV["CI"]
      @promtool_missing = true
      return
    end
    output, status =
      Open3.capture2e(promtool, "check", "metrics", stdin_data: text)
    assert status.success?,
      "promtool check metrics refused the exposition:\n#{output}\n#{text}"
    assert_empty output.strip, "promtool check metrics found problems"
  end

  # A test that passed every check but promtool's is skipped: its exposition was not checked.
  def after_teardown
    super
    if @promtool_missing && passed?
      skip("#{MISSING}; every other check of this test passed")
    end
  end

  # The samples of an exposition: "name{labels}" to value.
  def samples(text)
    text.lines.reject { |line| line.start_with?("#") }.to_h do |line|
      line.strip.rpartition(" ").then { |key, _, value| [key, Float(value)] }
    end
  end
end

# frozen_string_literal: true

require "open3"

# Prometheus' own parser of the text exposition format, through `promtool check metrics` (from Debian's prometheus
# package: bin/test unpacks its promtool into tmp/promtool when none is installed).
module Promtool
  UNPACKED = File.expand_path("../../tmp/promtool/usr/bin/promtool", __dir__)

  # The promtool to run, or nil.
  def self.path
    [ENV["JIGGLER_PROMTOOL"], UNPACKED, *ENV["PATH"].to_s.split(File::PATH_SEPARATOR).map { |dir| File.join(dir, "promtool") }]
      .compact.find { |path| File.executable?(path) }
  end

  # Checks an exposition with promtool, failing the test with what promtool said; skips (fails on CI) without promtool.
  def assert_valid_exposition(text)
    promtool = Promtool.path
    unless promtool
      ENV["CI"] ? flunk("promtool is missing: run bin/test") : skip("promtool is missing: run bin/test")
    end
    output, status = Open3.capture2e(promtool, "check", "metrics", stdin_data: text)
    assert status.success?, "promtool check metrics refused the exposition:\n#{output}\n#{text}"
    assert_empty output.strip, "promtool check metrics found problems"
  end

  # The samples of an exposition: "name{labels}" to value.
  def samples(text)
    text.lines.reject { |line| line.start_with?("#") }.to_h { |line| line.strip.rpartition(" ").then { |key, _, value| [key, Float(value)] } }
  end
end

# frozen_string_literal: true

require "test_helper"

# Lines a reader takes in at a glance. The linter (.line_width.yml) refuses any line over 120 columns; this holds
# the code lines of lib/ and test/ (not blank, not comments) to 80 columns for nine in ten, so a wide line stays the
# exception that a long literal or message needs.
describe "line width" do
  root = File.expand_path("..", __dir__)

  %w[lib test].each do |folder|
    it "keeps nine in ten code lines of #{folder}/ within 80 columns" do
      widths = Dir[File.join(root, folder, "**", "*.rb")].flat_map do |file|
        File.readlines(file, chomp: true).map(&:rstrip).reject { |line| line.empty? || line.lstrip.start_with?("#") }
      end.map(&:length).sort
      p90 = widths[(widths.size * 0.9).floor]
      over = widths.count { |width| width > 80 }
      assert_operator p90, :<=, 80,
        "#{over} of #{widths.size} code lines in #{folder}/ are over 80 columns (p90 #{p90})"
    end
  end
end

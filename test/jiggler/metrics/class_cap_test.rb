# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "minitest/mock"
require "jiggler/store/sqlite"
require "jiggler/web/prometheus"
require "jiggler/metrics/report"
require "support/promtool"

# Per-class metrics stay bounded however many classes run, on Redis and on SQLite: at most ClassCap::LIMIT classes
# are tracked (the rest counted under "(other)"), a class idle for a day leaves the totals, and /metrics stays under
# ClassCap::EXPOSITION_MAX bytes.
module ClassCapSpecs
  include Promtool

  # The documented bounds (Jiggler::Metrics::ClassCap), written out so the test reads on its own.
  CAP = Struct.new(:LIMIT, :NAME_MAX, :IDLE, :OTHER, :EXPOSITION_MAX)
    .new(200, 120, 86_400, "(other)", 2_000_000)

  def self.included(base)
    base.class_eval do
      it "tracks at most LIMIT classes and counts the runs of the others " \
        "under (other)" do
        add(Array.new(CAP.LIMIT + 50) { |index| "Job#{index}" }, runs: 2)
        add(["Job0", "Late", "x" * (CAP.NAME_MAX + 1)], runs: 1)
        totals = store.metrics_totals
        assert_equal CAP.LIMIT + 1, totals.size
        assert_equal [3, 50 * 2 + 2],
          [totals["Job0"].processed, totals[CAP.OTHER].processed]
        refute totals.key?("Late")
        assert_equal CAP.LIMIT + 1,
          store.metrics(minute, minute).fetch(minute).size
      end

      it "drops a class idle for IDLE seconds from the totals, " \
        "giving its place to another" do
        Time.stub(:now, Time.now - CAP.IDLE - 60) do
          add(Array.new(CAP.LIMIT) { |index| "Old#{index}" }, runs: 1)
        end
        add(["New"], runs: 1)
        assert_equal({"New" => 1},
          store.metrics_totals.transform_values(&:processed))
      end

      it "keeps /metrics under EXPOSITION_MAX with 2,000 classes " \
        "of the longest names, valid for promtool" do
        names = Array.new(2_000) do |index|
          format("%05d", index) + "\"\\" * ((CAP.NAME_MAX - 5) / 2)
        end
        names.each_slice(500) { |slice| add(slice, runs: 3) }
        _, _, body = Jiggler::Web::Prometheus.response(store)
        text = body.join
        per_class = text.lines
          .select { |line| line.include?("class=\"") }
          .sum(&:bytesize)
        assert_operator per_class, :<, CAP.EXPOSITION_MAX
        assert_equal CAP.LIMIT + 1,
          text.scan(/^jiggler_class_processed_total\{/).size
        assert_valid_exposition(text)
        assert_equal CAP.LIMIT + 1,
          Jiggler::Metrics::Report.new(store, minutes: 60).rows.size
      end

      it "folds stored totals past the cap when it reads them, " \
        "as written before it or by another client" do
        classes = Array.new(CAP.LIMIT + 10) { |index|
          ["Job#{index}", counts(index + 1)]
        }.to_h
        folded = Jiggler::Metrics::ClassCap.fold(
          classes.merge("y" * (CAP.NAME_MAX + 1) => counts(1000))
        )
        assert_equal CAP.LIMIT + 1, folded.size
        assert_equal (1..10).sum + 1000, folded[CAP.OTHER].processed
        refute folded.key?("Job0"),
          "the classes with the fewest runs are folded"
      end
    end
  end

  def minute = Time.now.to_i / 60

  def counts(runs)
    Jiggler::Metrics::Counts.new(
      runs, 0, runs * 1_000, Hash.new(0).merge(20 => runs)
    )
  end

  def add(names, runs:)
    store.add_metrics(
      minute, names.to_h { |name| [name, counts(runs)] }, retention: 3600
    )
  end
end

describe "per-class metrics bounds on Redis" do
  include ClassCapSpecs
end

describe "per-class metrics bounds on SQLite" do
  include ClassCapSpecs

  before do
    @dir = Dir.mktmpdir("jiggler-class-cap")
    Jiggler.configure do |config|
      config[:redis_url] = nil
      config[:sqlite_path] = File.join(@dir, "jobs.sqlite3")
    end
  end

  after do
    Jiggler.store.close
    FileUtils.rm_rf(@dir)
  end
end

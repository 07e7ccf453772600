# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "rack/mock"
require "jiggler/web"
require "jiggler/metrics/report"
require "jiggler/store/sqlite"
require "support/promtool"
require_relative "../fixtures/metrics_jobs"

# Real servers run three classes of known durations (10, 50 and 200 ms, the slowest failing half the time): the store's
# per-class metrics, the Metrics page and /metrics count every run exactly, read medians within 10% (the histogram's
# resolution) of what the runs themselves measured, and add up what two processes counted. The runs' own median, not the
# nominal sleep, is the reference: on a loaded machine a 10 ms sleep takes 11 ms or more.
module MetricsSpecs
  SLEEPS = {
    "MetricsJobs::Fast" => 0.01,
    "MetricsJobs::Medium" => 0.05,
    "MetricsJobs::Slow" => 0.2
  }.freeze
  EXPECTED = {
    "MetricsJobs::Fast" => [40, 0],
    "MetricsJobs::Medium" => [20, 0],
    "MetricsJobs::Slow" => [5, 5]
  }.freeze

  def self.included(base)
    base.class_eval do
      it "counts each class exactly, reads medians within 10% of the runs' " \
        "own, and merges two processes" do
        servers = Array.new(2) { start_metrics_server }
        enqueue_all
        wait_for(timeout: 60, message: "every run counted") do
          counted == EXPECTED
        end
        servers.each do |server|
          assert_operator server.log.scan(" done MetricsJobs::").size, :>, 0,
            "a server ran no job"
        end
        rows = Jiggler::Metrics::Report.new(store, minutes: 60).rows
        assert_equal EXPECTED,
          rows.to_h { |row| [row.name, [row.processed, row.failed]] }
        measured = measured_medians(servers)
        rows.each do |row|
          assert_operator measured[row.name], :>=, SLEEPS[row.name],
            "#{row.name} slept less than asked"
          assert_in_delta measured[row.name], row.p50,
            measured[row.name] * 0.1, "p50 of #{row.name}"
        end
        if ENV["JIGGLER_METRICS_FIGURES"]
          warn(
            rows.map { |row|
              format(
                "%s: %d/%d, p50 %.2f ms, p95 %.2f ms",
                row.name,
                row.processed,
                row.failed,
                row.p50 * 1000,
                row.p95 * 1000
              )
            }.join("; ")
          )
        end
        assert_metrics_endpoint
        assert_metrics_page(rows)
      end

      it "writes what it counted since its last heartbeat when it stops" do
        server = start_metrics_server(stats_interval: 5, recovery_timeout: 60)
        MetricsJobs::Fast.enqueue_bulk((1..3).zip)
        wait_for(message: "the jobs to finish") do
          server.log.scan(" done MetricsJobs::Fast").size == 3
        end
        server.signal("TERM")
        assert_equal 0, server.wait(timeout: 30)
        assert_equal({"MetricsJobs::Fast" => [3, 0]}, counted)
      end
    end
  end

  def teardown
    unless passed?
      @servers.each do |server|
        warn(
          "--- server #{server.pid} log:\n" \
          "#{server.log[-3000..] || server.log}"
        )
      end
    end
    super
  end

  include Promtool

  def enqueue_all
    MetricsJobs::Fast.enqueue_bulk((1..40).zip)
    MetricsJobs::Medium.enqueue_bulk((1..20).zip)
    MetricsJobs::Slow.enqueue_bulk((1..10).zip)
  end

  # Per class: the median of the durations the runs printed, as the histogram reads it: the run at rank half the count
  # (the 10th of 20), not the one after it. On a loaded host the runs can split in two groups (ten at 50 ms, ten at
  # 57), and the 11th then lies more than 10% above the 10th that the histogram's median stands for.
  def measured_medians(servers)
    durations = servers
      .flat_map { |server| server.log.scan(/^slept (\S+) ([\d.]+)$/) }
      .group_by(&:first)
    durations.transform_values do |pairs|
      pairs
        .map { |_, seconds| Float(seconds) }
        .sort
        .then { |sorted| sorted[(sorted.size * 0.5).ceil - 1] }
    end
  end

  # Per class: runs that finished and runs that failed, as the store's totals have them.
  def counted
    store.metrics_totals.transform_values do |counts|
      [counts.processed, counts.failed]
    end
  end

  # A verbose server (it logs each job's end) that beats every second unless told otherwise, with 5 workers.
  def start_metrics_server(**settings)
    config = File.join(Dir.mktmpdir("jiggler-metrics"), "jiggler.yml")
    File.write(
      config,
      {"stats_interval" => 1}
        .merge(settings.transform_keys(&:to_s))
        .map { |key, value| "#{key}: #{value}\n" }
        .join
    )
    server = ServerProcess.new(
      "-r", "./test/fixtures/metrics_jobs.rb", "-C", config, "-c", "5", "-v",
      namespace: @namespace, env: store_env
    ).start
    @servers << server
    wait_for(message: "server start") do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, server.log
    server
  end

  def get(path)
    status, headers, body =
      Jiggler::Web.new(store: store).call(Rack::MockRequest.env_for(path))
    assert_equal 200, status, body.join
    [headers, body.join]
  end

  def assert_metrics_endpoint
    headers, text = get("/metrics")
    assert_equal "text/plain; version=0.0.4; charset=utf-8",
      headers["content-type"]
    assert_valid_exposition(text)
    values = samples(text)
    EXPECTED.each do |name, (processed, failed)|
      assert_equal processed,
        values[%(jiggler_class_processed_total{class="#{name}"})]
      assert_equal failed,
        values[%(jiggler_class_failed_total{class="#{name}"})]
      assert_equal processed + failed,
        values[%(jiggler_job_duration_seconds_count{class="#{name}"})]
      assert_equal processed + failed,
        values[
          %(jiggler_job_duration_seconds_bucket{class="#{name}",le="+Inf"})
        ]
    end
    assert_equal 65, values["jiggler_processed_total"]
    assert_equal 5, values["jiggler_dead_jobs"]
    assert_equal 2, values["jiggler_processes"]
    _, alone = Jiggler::Web::Prometheus.new(store: store)
      .call(Rack::MockRequest.env_for("/"))
      .last(2)
    assert_equal samples(text).keys, samples(alone.join).keys
  end

  def assert_metrics_page(rows)
    _, html = get("/classes?hours=1&sort=p95")
    names = html.scan(/<td class="class">([^<]+)</).flatten
    assert_equal rows.sort_by { |row| -row.p95 }.map(&:name), names
    EXPECTED.each_key { |name| assert_includes html, %(aria-label="#{name}) }
  end
end

describe "per-class metrics on Redis" do
  include MetricsSpecs

  def store_env = {}
end

describe "per-class metrics on SQLite" do
  include MetricsSpecs

  before do
    @path = File.join(Dir.mktmpdir("jiggler-metrics-sqlite"), "jobs.sqlite3")
    @sqlite = Jiggler::Store::SQLite.new(path: @path)
    Jiggler.client = Jiggler::Client.new(@sqlite)
  end

  after do
    @sqlite.close
    FileUtils.rm_rf(File.dirname(@path))
  end

  def store = @sqlite

  def store_env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path}
end

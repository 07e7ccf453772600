# frozen_string_literal: true

require "test_helper"
require "support/web_session"
require "support/promtool"
require "jiggler/metrics/recorder"

# The dashboard's operating pages through Rack::Lint: /metrics for Prometheus (and the same app mounted alone), the
# Metrics page with whatever period and order it is asked for, and Quiet and Stop on the Busy page.
describe "Jiggler::Web operating pages" do
  include WebSession
  include Promtool

  def add_runs(name, seconds, count, failed: 0)
    recorder = Jiggler::Metrics::Recorder.new
    count.times { |n| recorder.record(name, seconds, n < failed) }
    recorder.hand_over
    web_store.add_metrics(Time.now.to_i / 60, recorder.take, retention: 3_600)
  end

  it "serves /metrics in the Prometheus text format, " \
    "and alone as its own Rack app" do
    web_store.push("mail", [payload(queue: "mail")])
    add_runs("MailJob", 0.03, 4, failed: 1)
    get "/metrics"
    assert_equal [200, "text/plain; version=0.0.4; charset=utf-8"],
      [last_response.status, last_response.content_type]
    assert_valid_exposition(body)
    assert_equal [1, 3, 1], samples(body).values_at(
      %(jiggler_queue_size{queue="mail"}),
      %(jiggler_class_processed_total{class="MailJob"}),
      %(jiggler_class_failed_total{class="MailJob"})
    )
    alone = Rack::MockRequest.new(
      Rack::Lint.new(Jiggler::Web::Prometheus.new(store: web_store))
    ).get("/")
    assert_equal samples(body).keys, samples(alone.body).keys
  end

  it "answers a scrape with 503 and one line " \
    "when the store cannot be reached" do
    store = Jiggler::Store::Redis.new(
      pool: RedisClient.new(url: "redis://127.0.0.1:#{free_port}/0")
    )
    response = Rack::MockRequest.new(
      Rack::Lint.new(Jiggler::Web::Prometheus.new(store: store))
    ).get("/")
    assert_equal [503, "The job store cannot be reached."],
      [response.status, response.body]
  end

  it "shows the Metrics page for the period and order asked, " \
    "and the defaults for anything else" do
    add_runs("SlowJob", 0.5, 2)
    add_runs("<b>FastJob</b>", 0.001, 50, failed: 10)
    get "/classes?hours=24&sort=failures"
    assert_equal 200, last_response.status
    assert_equal ["&lt;b&gt;FastJob&lt;/b&gt;", "SlowJob"],
      body.scan(%r{<td class="class">([^<]*)</td>}).flatten
    assert_includes body, "in the last 24 h"
    get "/classes?hours=%00&sort=<script>"
    assert_equal 200, last_response.status
    assert_equal ["SlowJob", "&lt;b&gt;FastJob&lt;/b&gt;"],
      body.scan(%r{<td class="class">([^<]*)</td>}).flatten, "by total time"
    assert_includes body, "in the last 1 h"
  end

  it "asks a process to quiet or stop from the Busy page, " \
    "with the page's CSRF token only" do
    post_form("/busy/box%3A42/quiet", {}, from: "/busy")
    assert_redirected_to "/busy"
    post_form("/busy/box%3A42/stop", {}, from: "/busy")
    assert_equal %w[quiet stop], web_store.take_signals("box:42")
    post("/busy/box%3A42/stop", {}, "HTTP_SEC_FETCH_SITE" => "same-origin")
    assert_equal 403, last_response.status
    assert_empty web_store.take_signals("box:42")
  end
end

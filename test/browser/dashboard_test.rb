# frozen_string_literal: true

require "test_helper"
require "support/browser_session"
require "support/web_session"
require "jiggler/metrics/recorder"

# The dashboard in headless Chromium: its script runs under the CSP, counters and chart update live and stop while
# the tab is hidden, and the forms retry a dead job and pause and resume a queue.
describe "dashboard in a browser" do
  include BrowserSession
  include WebSession

  # Counts jobs as processed (and now and then as failed) the way servers do, so that the chart has rates to draw.
  def work
    @ticks = (@ticks || 0) + 1
    store.fetch(
      "browser-test",
      [],
      limit: 0,
      acks: ["x"] * (@ticks % 7 + 3),
      reliable: false
    )
    add_failed(:retry, [[Time.now.to_f + 600, failed]]) if (@ticks % 10).zero?
    nil
  end

  def chart_points
    page.evaluate(
      "document.querySelector('#chart polyline.processed')?.points.length || 0"
    )
  end

  it "loads the dashboard, with counters and a chart that update live" do
    store.push("default", Array.new(12) { payload })
    store.push(
      "mail", [payload(queue: "mail", enqueued_at: Time.now.to_f - 42)]
    )
    visit("/")
    wait_in_browser("the live script to start") do
      page.at_css("#stats[data-live=on]")
    end
    assert_equal "13", text('[data-stat="enqueued"]')
    page.at_css("#interval").select("1000")
    wait_in_browser("the chart to have 6 points", timeout: 20) do
      work
      chart_points >= 6
    end
    wait_in_browser("the processed counter to update") do
      text('[data-stat="processed"]').delete(",").to_i.positive?
    end
    assert_match(/\Alive · updated/, text("#live"))
    screenshot("dashboard")
    page.resize(width: 390, height: 844)
    assert_operator page.evaluate("document.documentElement.scrollWidth"),
      :<=, 390, "no sideways scrolling at phone width"
    screenshot("dashboard-phone")
  end

  it "stops polling while the tab is hidden and resumes when it shows" do
    visit("/")
    wait_in_browser("the first poll") do
      text("#live").start_with?("live · updated")
    end
    page.execute(<<~JS)
      Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "hidden"});
      document.dispatchEvent(new Event("visibilitychange"));
    JS
    assert_equal "paused while the tab is hidden", text("#live")
    store.push("default", [payload])
    page.execute(<<~JS)
      Object.defineProperty(document, "visibilityState", {configurable: true, get: () => "visible"});
      document.dispatchEvent(new Event("visibilitychange"));
    JS
    wait_in_browser("a poll right after the tab shows") do
      text('[data-stat="enqueued"]') == "1" && text("#live").start_with?("live")
    end
  end

  it "retries a dead job from the dead list" do
    job = failed(name: "InvoiceJob", queue: "billing", message: "card declined")
    add_failed(:dead, [[Time.now.to_f - 60, job]])
    visit("/dead")
    assert_includes text("tbody"), "InvoiceJob"
    page.at_css('input[name="keys[]"]').click
    screenshot("dead")
    page.at_css('button[value="run"]').click
    wait_in_browser("the dead list to be empty") do
      text("main").include?("No jobs here.")
    end
    assert_equal [0, {"billing" => 1}], [store.counts[:dead], store.queue_sizes]
  end

  it "shows a dead job's page with its error" do
    job = failed(name: "InvoiceJob", message: "card <b>declined</b>")
    add_failed(:dead, [[1_900_000_000.5, job]])
    visit("/dead/1900000000.5-#{jid_of(job)}")
    assert_equal "InvoiceJob", text("h1")
    assert_includes text("main"), "card <b>declined</b>"
    screenshot("job")
  end

  it "pauses and resumes a queue" do
    store.push("mail", [payload(queue: "mail")])
    visit("/queues")
    page.at_css('tr[data-queue="mail"] button').click
    wait_in_browser("the queue to show as paused") do
      text('tr[data-queue="mail"] td:nth-child(4)') == "paused"
    end
    assert_equal ["mail"], store.paused_queues
    screenshot("queues")
    page.at_css('tr[data-queue="mail"] button').click
    wait_in_browser("the queue to run again") do
      text('tr[data-queue="mail"] td:nth-child(4)') == "running"
    end
    assert_empty store.paused_queues
  end

  it "opens and pauses queues whose names a URL would otherwise change" do
    ["..", "a?b"].each do |name|
      store.push(name, [payload(queue: name)])
      visit("/queues")
      page.at_css(%(tr[data-queue="#{name}"] a)).click
      wait_in_browser("the page of queue #{name}") do
        text("h1").start_with?("Queue #{name}")
      end
      page.at_css(".toolbar button").click
      wait_in_browser("queue #{name} paused") do
        text("h1") == "Queue #{name} paused"
      end
      assert_includes store.paused_queues, name
    end
  end

  it "shows each class's runs, failures and percentiles on the Metrics page, " \
    "sorted as asked, with a chart each" do
    minute = Time.now.to_i / 60
    {
      "ReportJob" => [0.8, 0],
      "MailerJob" => [0.02, 3],
      "ImportJob" => [0.2, 9]
    }.each do |name, (seconds, failures)|
      (0...40).step(3) do |ago|
        recorder = Jiggler::Metrics::Recorder.new
        (5 + ago % 7).times do |n|
          recorder.record(
            name, seconds * (1 + n * 0.05), n < failures && ago.even?
          )
        end
        recorder.hand_over
        store.add_metrics(minute - ago, recorder.take, retention: 3_600)
      end
    end
    visit("/classes")
    assert_equal %w[ReportJob ImportJob MailerJob],
      page.css("td.class").map(&:text), "by total time"
    assert_equal 3, page.css("svg.metrics-chart").size
    assert_operator page.css("svg.metrics-chart rect.failed").size, :>, 0
    page.at_xpath("//th/a[text()='Failed']").click
    wait_in_browser("the classes by failures") do
      page.css("td.class").map(&:text) == %w[ImportJob MailerJob ReportJob]
    end
    screenshot("metrics")
    page.resize(width: 390, height: 844)
    assert_operator page.evaluate("document.documentElement.scrollWidth"),
      :<=, 390, "no sideways scrolling at phone width"
  end

  it "shows a running job on the Busy page within about a second, " \
    "then quiets and stops its server" do
    server = start_server
    wait_for(message: "the server registered") { store.processes.any? }
    SlowJob.enqueue("busy", 10)
    wait_for(message: "the job's start") { recorded.include?("start:busy") }
    visit("/busy")
    wait_in_browser("the running job on the page", timeout: 3) do
      visit("/busy") unless page.at_css("main")&.text.to_s.include?("SlowJob")
      page.at_css("main").text.include?("SlowJob")
    end
    screenshot("busy")
    page.at_xpath("//button[text()='Quiet']").click
    wait_for(message: "the server quiet") do
      server.log.include?("quiet: no new jobs will be fetched")
    end
    confirmed = []
    page.on(:dialog) do |dialog|
      confirmed << dialog.message
      dialog.accept
    end
    page.at_xpath("//button[text()='Stop']").click
    wait_for(timeout: 30, message: "the server to stop") { !server.running? }
    assert_includes server.log, "stop requested through the store"
    assert_match(/\AStop .+:#{server.pid}\?/, confirmed.first)
  end

  it "runs a recurring task now and disables it" do
    store.save_recurring(
      "hourly" => %({"class":"TickJob","schedule":"0 * * * *","job":{"queue":"ticks","retries":0}})
    )
    visit("/recurring")
    page.at_css('tr[data-task="hourly"] button').click
    wait_in_browser("the task's job to be enqueued") do
      store.queue_sizes["ticks"]
    end
    assert_equal 1, store.queue_sizes["ticks"], "one job for one click"
    wait_in_browser("the page to show the run") do
      text('tr[data-task="hourly"] td:nth-child(4)').end_with?("ago")
    end
    page.at_css('tr[data-task="hourly"] button.danger').click
    wait_in_browser("the task to show as disabled") do
      text('tr[data-task="hourly"] td:nth-child(6)') == "disabled"
    end
    screenshot("recurring")
    refute store.enqueue_recurring("hourly", 100, "ticks", payload)
  end
end

# frozen_string_literal: true

require "test_helper"
require "support/browser_session"
require "support/web_session"

# The dashboard in headless Chromium: its script runs under the CSP, counters and chart update live and stop while
# the tab is hidden, and the forms retry a dead job and pause and resume a queue.
describe "dashboard in a browser" do
  include BrowserSession
  include WebSession

  # Counts jobs as processed (and now and then as failed) the way servers do, so that the chart has rates to draw.
  def work
    @ticks = (@ticks || 0) + 1
    store.fetch("browser-test", [], limit: 0, acks: ["x"] * (@ticks % 7 + 3), reliable: false)
    add_failed(:retry, [[Time.now.to_f + 600, failed]]) if (@ticks % 10).zero?
    nil
  end

  def chart_points = page.evaluate("document.querySelector('#chart polyline.processed')?.points.length || 0")

  it "loads the dashboard, with counters and a chart that update live" do
    store.push("default", Array.new(12) { payload })
    store.push("mail", [payload(queue: "mail", enqueued_at: Time.now.to_f - 42)])
    visit("/")
    wait_in_browser("the live script to start") { page.at_css("#stats[data-live=on]") }
    assert_equal "13", text('[data-stat="enqueued"]')
    page.at_css("#interval").select("1000")
    wait_in_browser("the chart to have 6 points", timeout: 20) do
      work
      chart_points >= 6
    end
    wait_in_browser("the processed counter to update") { text('[data-stat="processed"]').delete(",").to_i.positive? }
    assert_match(/\Alive · updated/, text("#live"))
    screenshot("dashboard")
    page.resize(width: 390, height: 844)
    assert_operator page.evaluate("document.documentElement.scrollWidth"), :<=, 390, "no sideways scrolling at phone width"
    screenshot("dashboard-phone")
  end

  it "stops polling while the tab is hidden and resumes when it shows" do
    visit("/")
    wait_in_browser("the first poll") { text("#live").start_with?("live · updated") }
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
    wait_in_browser("a poll right after the tab shows") { text('[data-stat="enqueued"]') == "1" && text("#live").start_with?("live") }
  end

  it "retries a dead job from the dead list" do
    job = failed(name: "InvoiceJob", queue: "billing", message: "card declined")
    add_failed(:dead, [[Time.now.to_f - 60, job]])
    visit("/dead")
    assert_includes text("tbody"), "InvoiceJob"
    page.at_css('input[name="keys[]"]').click
    screenshot("dead")
    page.at_css('button[value="run"]').click
    wait_in_browser("the dead list to be empty") { text("main").include?("No jobs here.") }
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
    wait_in_browser("the queue to show as paused") { text('tr[data-queue="mail"] td:nth-child(4)') == "paused" }
    assert_equal ["mail"], store.paused_queues
    screenshot("queues")
    page.at_css('tr[data-queue="mail"] button').click
    wait_in_browser("the queue to run again") { text('tr[data-queue="mail"] td:nth-child(4)') == "running" }
    assert_empty store.paused_queues
  end

  it "runs a recurring task now and disables it" do
    store.save_recurring("hourly" => %({"class":"TickJob","schedule":"0 * * * *","job":{"queue":"ticks","retries":0}}))
    visit("/recurring")
    page.at_css('tr[data-task="hourly"] button').click
    wait_in_browser("the task's job to be enqueued") { store.queue_sizes["ticks"] == 1 }
    wait_in_browser("the page to show the run") { text('tr[data-task="hourly"] td:nth-child(4)').end_with?("ago") }
    page.at_css('tr[data-task="hourly"] button.danger').click
    wait_in_browser("the task to show as disabled") { text('tr[data-task="hourly"] td:nth-child(6)') == "disabled" }
    screenshot("recurring")
    refute store.enqueue_recurring("hourly", 100, "ticks", payload)
  end
end

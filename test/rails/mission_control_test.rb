# frozen_string_literal: true

# Mission Control - Jobs (the real gem, mounted at /jobs in test/rails/app) on jiggler: its pages
# read the store, and its actions change it, with a real `jiggler -r` server running the jobs. `rake
# test:rails` runs this file under each Rails version (gemfiles/) and on each store
# (JIGGLER_TEST_STORE=sqlite, redis).
require_relative "rails_helper"
require "jiggler/testing"

Jiggler::Testing.disable! # jobs go to the real store

describe "Mission Control - Jobs " \
  "(#{Rails.version}, #{RailsApp::STORE} store)" do
  include Waiting

  def server = RailsApp.server

  def store = Jiggler.store

  # Mission Control's pages of this app.
  def app = "/jobs/applications/shop"

  # A request through the app's routes; the status, the redirect and the body.
  def request(path, method: "GET", params: {})
    env = Rack::MockRequest.env_for(path, method: method, params: params)
    env["HTTP_HOST"] = "localhost"
    status, headers, body = Rails.application.call(env)
    [status, headers["location"], body.each.to_a.join]
  ensure
    body&.close # ends the request's executor run
  end

  # A page, which must answer 200.
  def page(path)
    status, _, html = request("#{app}#{path}")
    assert_equal 200, status, "GET #{path}: #{html[0, 2000]}"
    html
  end

  # An action, which must redirect.
  def act(path, method: "POST", params: {})
    status, location, html =
      request("#{app}#{path}", method: method, params: params)
    assert_equal 302, status, "#{method} #{path}: #{html[0, 2000]}"
    location
  end

  def runs(note) = Event.where(kind: "doomed-run", note: note).count

  # Waits for a DoomedJob to land in the dead set after its two runs.
  def dead(note)
    job = DoomedJob.perform_later(note)
    wait_for(timeout: 20, message: "#{note} dead\n#{server.log[-2000..]}") do
      dead_jids(note).any?
    end
    job
  end

  def dead_jids(note)
    store.set_entries(:dead, limit: 1000).filter_map do |payload, _|
      job = Jiggler::Payload.load(payload)
      job["jid"] if job["args"] == [note]
    end
  end

  it "lists the queues with their sizes, " \
    "and a queue's Active Job and native jobs" do
    BulkJob.set(queue: "mc-idle").perform_later(41) # no server works this queue
    LedgerJob.with_options(queue: "mc-idle").enqueue("native-note")
    assert_match(/mc-idle.*?2/m, page("/queues"))
    html = page("/queues/mc-idle")
    %w[BulkJob 41 LedgerJob native-note].each do |text|
      assert_includes html, text
    end
  ensure
    store.clear_queue("mc-idle")
  end

  it "pauses and resumes a queue in the store, " \
    "and a server then runs its job" do
    server
    act("/queues/bulk/pause") # an empty queue the server works
    assert_includes store.paused_queues, "bulk"
    BulkJob.perform_later(4242)
    # a later job, in a queue the server fetches from after bulk
    LedgerJob.enqueue("mc-after-pause")
    wait_for(timeout: 15, message: "the ledger job") do
      Event.exists?(kind: "ledger", note: "mc-after-pause")
    end
    assert_equal 1, ActiveJob.queues[:bulk].size # skipped while paused
    act("/queues/bulk/pause", method: "DELETE")
    refute_includes store.paused_queues, "bulk"
    wait_for(timeout: 15, message: "the resumed job") do
      Event.exists?(kind: "bulk", note: "4242")
    end
  end

  it "shows a failed job with its error and backtrace, " \
    "and retries it on the server" do
    server
    job = dead("mc-retried")
    html = page("/failed/jobs")
    assert_includes html, "DoomedJob::Broken: mc-retried cannot work"
    html = page("/jobs/#{job.job_id}")
    ["DoomedJob", "mc-retried cannot work", "doomed_job.rb"].each do
      assert_includes html, _1
    end
    act("/jobs/#{job.job_id}/retry")
    wait_for(timeout: 15, message: "the retried run\n#{server.log[-2000..]}") do
      runs("mc-retried") == 3
    end
  end

  it "shows a native job's failure with its class, arguments and error" do
    server
    LedgerJob.enqueue("missing")
    wait_for(timeout: 15, message: "the failed LedgerJob") do
      page("/failed/jobs").include?("RuntimeError: no missing")
    end
    assert_includes page("/failed/jobs?filter[job_class_name]=LedgerJob"),
      "LedgerJob"
  end

  it "discards a failed job, then all the failed jobs of a class" do
    server
    one = dead("mc-discarded")
    dead("mc-discarded-too")
    act("/jobs/#{one.job_id}/discard")
    assert_empty dead_jids("mc-discarded")
    act("/jobs/bulk_discards", params: {filter: {job_class_name: "DoomedJob"}})
    assert_empty dead_jids("mc-discarded-too")
  end

  it "retries all the failed jobs of a class" do
    server
    %w[mc-bulk-1 mc-bulk-2].each { |note| dead(note) }
    act("/jobs/bulk_retries", params: {filter: {job_class_name: "DoomedJob"}})
    wait_for(timeout: 15, message: "the retried runs") do
      runs("mc-bulk-1") == 3 && runs("mc-bulk-2") == 3
    end
  end

  it "lists a scheduled job and dispatches it now" do
    server
    account = Account.create!(name: "mc-scheduled")
    job = DepositJob.set(wait: 3600).perform_later(account, amount: 3)
    assert_includes page("/scheduled/jobs"), "DepositJob"
    assert_includes page("/jobs/#{job.job_id}"), "DepositJob"
    act("/jobs/#{job.job_id}/dispatch")
    wait_for(timeout: 15, message: "the dispatched deposit") do
      account.reload.balance == 3
    end
  end

  it "shows the jobs in progress and the workers running them" do
    server
    SlowJob.set(queue: "default").perform_later("mc-slow", 8)
    wait_for(timeout: 10, message: "the running job") do
      page("/in_progress/jobs").include?("SlowJob")
    end
    html = page("/workers")
    assert_includes html, "SlowJob"
    # other tests' servers may be at work too
    workers = html.scan(%r{#{app}/workers/(\h+)}).flatten.uniq
    assert(
      workers.any? { |worker| page("/workers/#{worker}").include?("SlowJob") },
      "the worker's page shows the job"
    )
  end

  it "discards a pending job and clears a queue" do
    jobs = Array.new(2) do |index|
      BulkJob.set(queue: "mc-cleared").perform_later(index)
    end
    act("/jobs/#{jobs.first.job_id}/discard")
    assert_equal 1, store.queue_sizes["mc-cleared"]
    ActiveJob.queues["mc-cleared"].clear
    assert_nil store.queue_sizes["mc-cleared"]
  end
end

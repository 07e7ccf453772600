# frozen_string_literal: true

# jiggler in a real Rails app (test/rails/app), end to end: Active Job through the adapter, a real `jiggler -r`
# server process running the jobs, their effects checked in the app's database. `rake test:rails` runs this file
# under each Rails version (gemfiles/) and on each store (JIGGLER_TEST_STORE=sqlite, redis).
require_relative "rails_helper"
require "fileutils"
require "jiggler/testing"

# jobs go to the real store, except in the tests that switch to fake mode for a block
Jiggler::Testing.disable!

# Job classes of this process only: the servers, which load test/rails/app, do not know them.
class GhostJob < ApplicationJob
  def perform(note) = Event.create!(kind: "ghost", note: note)
end

class PhantomJob
  include Jiggler::Job

  job_options retries: 0

  def perform(note) = Event.create!(kind: "phantom", note: note)
end

describe "Rails (#{Rails.version}, #{RailsApp::STORE} store)" do
  include Waiting

  def server = RailsApp.server

  def events(name, job_class)
    RailsApp.events.select do |event|
      event["event"] == name && event["class"] == job_class
    end
  end

  # A dashboard page through the app's routes, as a browser would get it.
  def dashboard(path)
    status, _, body = Rails.application.call(
      Rack::MockRequest.env_for("/jiggler#{path}", "HTTP_HOST" => "localhost")
    )
    assert_equal 200, status
    body.each.to_a.join
  ensure
    # ends the request's executor run, which holds Active Record's query cache until then
    body&.close
  end

  def dead_jobs = set(:dead)

  def set(name)
    Jiggler.store.set_entries(name, limit: 1000)
      .map { |payload, _| Jiggler::Payload.load(payload) }
  end

  # The lines of a server's log that parse as JSON objects.
  def json_lines(server)
    server.log.lines.filter_map do |line|
      JSON.parse(line) if line.start_with?("{")
    end
  end

  def started(process)
    wait_for(timeout: 60, message: "the server start\n#{process.log}") do
      process.log.include?("started:")
    end
    process
  end

  it "runs perform_later from the app in the server, " \
    "with the effect in the app's database" do
    server
    account = Account.create!(name: "acme")
    job = DepositJob.perform_later(account, amount: 5)
    assert_match(/\A\h{24}\z/, job.provider_job_id)
    wait_for(timeout: 15, message: "the deposit\n#{server.log}") do
      account.reload.balance == 5
    end
    DepositJob.set(wait: 1).perform_later(account, amount: 7)
    assert_equal 1, Jiggler.summary["scheduled_jobs_count"]
    wait_for(timeout: 15, message: "the scheduled deposit") do
      account.reload.balance == 12
    end
    assert_operator events("perform.jiggler", "DepositJob").size, :>=, 2
  end

  it "logs Active Job jobs under their own class, one JSON object per line" do
    server
    DoomedJob.perform_later("logged", "ArgumentError")
    wait_for(message: "the job's log lines") do
      server.log.include?("doomed-run") || Event.exists?(note: "logged")
    end
    LedgerJob.enqueue("missing")
    line = wait_for(message: "the retry line\n#{server.log}") do
      server.log.lines.map { |text| JSON.parse(text) }.find do |entry|
        entry["event"] == "retry" && entry["class"] == "LedgerJob"
      end
    end
    assert_equal ["ERROR", "ledger", "1"],
      line.values_at("level", "queue", "attempt")
    wait_for(message: "the retry event") do
      events("retry.jiggler", "LedgerJob").any?
    end
  end

  it "retries a retry_on job that fails, until it succeeds" do
    server
    FlakyJob.perform_later("f1")
    wait_for(timeout: 20, message: "the third run\n#{server.log}") do
      Event.exists?(kind: "flaky-done", note: "f1")
    end
    assert_equal %w[f1:1 f1:2 f1:3],
      Event.where(kind: "flaky-run").order(:id).pluck(:note)
    assert_empty dead_jobs.select { |job| job["name"] == "FlakyJob" }
  end

  it "sends a job whose retries run out to the dead set with its error, " \
    "reported to Rails.error" do
    server
    DoomedJob.perform_later("d1")
    job = wait_for(timeout: 20, message: "the dead job\n#{server.log}") do
      dead_jobs.find { |entry| entry["args"] == ["d1"] }
    end
    assert_equal ["DoomedJob", "DoomedJob::Broken", "d1 cannot work"],
      job.values_at("name", "error_class", "error_message")
    assert_equal 2, Event.where(kind: "doomed-run", note: "d1").count
    wait_for(message: "the death event") do
      events("death.jiggler", "DoomedJob").any?
    end
    # of this job: other tests' DoomedJobs are reported too
    report = wait_for(message: "the error report") do
      RailsApp.events.find do |event|
        event["event"] == "report" && event.dig("context", "jid") == job["jid"]
      end
    end
    assert_equal(
      {"class" => "DoomedJob", "jid" => job["jid"], "queue" => "default"},
      report["context"].slice("class", "jid", "queue")
    )
    assert_equal "DoomedJob::Broken", report["error"]
    page = dashboard("/dead?filter=#{job["jid"]}")
    assert_includes page, "DoomedJob"
    assert_includes page, "d1 cannot work"
  end

  it "discards a discard_on job without a dead entry" do
    server
    DoomedJob.perform_later("d2", "ArgumentError")
    wait_for(message: "the discarded run") do
      Event.exists?(kind: "doomed-run", note: "d2")
    end
    # the same server runs this one after the discarded job
    LedgerJob.enqueue("after-d2")
    wait_for(message: "the next job") do
      Event.exists?(kind: "ledger", note: "after-d2")
    end
    assert_empty dead_jobs.select { |job| job["args"].first == "d2" }
  end

  it "enqueues 1,000 jobs with perform_all_later in one go and runs them all" do
    server
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    ActiveJob.perform_all_later(Array.new(1000) { |index| BulkJob.new(index) })
    enqueued = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    notes = (0...1000).map(&:to_s) # other tests run BulkJob too
    wait_for(
      timeout: 90, message: "1,000 bulk jobs\n#{server.log[-2000..]}"
    ) { Event.where(kind: "bulk", note: notes).count == 1000 }
    ran = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal notes.sort,
      Event.where(kind: "bulk", note: notes).pluck(:note).sort
    puts format(
      "\n  perform_all_later of 1,000 jobs: " \
      "enqueued in %.3f s, all run in %.2f s (%s store)",
      enqueued,
      ran,
      RailsApp::STORE
    )
  end

  it "gives each of 50 jobs running at once on fibers its own connection" do
    server
    ActiveJob.perform_all_later(
      Array.new(50) { |index| ConnectionJob.new(index) }
    )
    wait_for(
      timeout: 30, message: "50 connection jobs\n#{server.log[-2000..]}"
    ) { Event.where(kind: "connection").count == 50 }
    rows = Event.where(kind: "connection").to_a
    assert_equal 50, rows.map { |row| row.note.split(":").last }.uniq.size,
      "two jobs shared a connection"
    assert_operator rows.map(&:started_at).max, :<, rows.map(&:finished_at).min,
      "the 50 jobs did not all run at once"
  end

  it "publishes enqueue, perform, retry and death notifications" do
    received = []
    subscriber = ActiveSupport::Notifications.subscribe(
      "enqueue.jiggler"
    ) { |*, payload| received << payload[:job]["name"] }
    LedgerJob.with_options(queue: "elsewhere").enqueue("seen")
    assert_equal ["LedgerJob"], received
  ensure
    ActiveSupport::Notifications.unsubscribe(subscriber)
  end

  it "keeps set(queue:, priority:, wait_until:) and the arguments " \
    "on the stored job" do
    at = Time.now + 3600
    Jiggler::Testing.fake! do
      DepositJob.set(queue: "ledger", priority: 5, wait_until: at)
        .perform_later(Account.new(id: 9), amount: 1)
      job = Jiggler::Testing.jobs_for("DepositJob").last
      assert_equal ["ledger", 5], [job["queue"], job["active_job"]["priority"]]
      assert_in_delta at.to_f, job["at"], 0.001
      assert_equal "gid://shop/Account/9", job["args"].first["_aj_globalid"]
    end
  ensure
    Jiggler::Testing.clear_all
  end

  it "refuses a queue name jiggler cannot store, before anything is written" do
    error = assert_raises(ArgumentError) do
      DepositJob.set(queue: "has space")
        .perform_later(Account.new(id: 1), amount: 1)
    end
    assert_match(/queue must be a queue name: .* without spaces/, error.message)
  end

  it "enqueues after the transaction commits where Rails can (7.2 and later)" do
    Jiggler::Testing.fake! do
      Account.transaction do
        DepositJob.perform_later(Account.create!(name: "tx"), amount: 1)
        deferred =
          ActiveJob::Base.respond_to?(:enqueue_after_transaction_commit)
        assert_equal(
          deferred ? 0 : 1, Jiggler::Testing.jobs_for("DepositJob").size
        )
      end
      assert_equal 1, Jiggler::Testing.jobs_for("DepositJob").size
    end
  ensure
    Jiggler::Testing.clear_all
  end

  it "runs Active Job jobs in the testing modes: drained in fake mode" do
    account = Account.create!(name: "drained")
    Jiggler::Testing.fake! do
      DepositJob.perform_later(account, amount: 3)
      assert_equal 1, Jiggler::Testing.drain_all
    end
    assert_equal 3, account.reload.balance
  end

  it "follows Rails.logger and mounts the dashboard in the routes" do
    assert_same Rails.logger, Jiggler.logger
    assert_includes dashboard("/queues"), "Queues"
  end

  it "runs each job in the executor, eager-loaded outside development, " \
    "and in the reloader in development" do
    server
    RailsApp.development_server
    servers = [
      started(
        RailsApp.start_server(
          "-c", "2", "-q", "probe-test", env: {"RAILS_ENV" => "test"}
        )
      )
    ]
    # the shared server works this queue too
    ProbeJob.with_options(queue: "probe-production").enqueue("production")
    %w[development test].each do |env|
      ProbeJob.with_options(queue: "probe-#{env}").enqueue(env)
    end
    probes = Event.where(kind: "probe").where(
      "note LIKE 'production %' OR note LIKE 'development %' OR note LIKE 'test %'"
    )
    wait_for(timeout: 20, message: "the probes") { probes.count == 3 }
    notes = probes.pluck(:note).sort
    assert_equal [
      "development development true true false 1",
      "production production true false true 1",
      "test test true false true 1"
    ], notes
  ensure
    servers&.each(&:kill)
  end

  it "runs Active Job jobs in a development server, " \
    "which loads nothing eagerly" do
    development = RailsApp.development_server
    account = Account.create!(name: "development")
    DepositJob.set(queue: "dev").perform_later(account, amount: 4)
    wait_for(
      timeout: 20, message: "the deposit\n#{development.log[-3000..]}"
    ) { account.reload.balance == 4 }
    assert_empty dead_jobs.select { |job|
      job["args"].first == account.to_global_id.to_s
    }
  end

  it "retries with backoff a job whose class the server cannot load, " \
    "Active Job's (retries: 0) included" do
    development = RailsApp.development_server
    jids = [GhostJob.set(queue: "dev").perform_later("g1").provider_job_id,
      PhantomJob.with_options(queue: "dev").enqueue("p1")]
    retried = wait_for(
      timeout: 20, message: "the retries\n#{development.log[-3000..]}"
    ) do
      jobs = set(:retry).select { |job| jids.include?(job["jid"]) }
      jobs if jobs.size == 2
    end
    failures = retried.map { |job| job.values_at("error_class", "attempt") }
    assert_equal [["Jiggler::UnknownJobError", 1]] * 2, failures
    ghost = retried.find { |job| job["name"] == "GhostJob" }
    assert_match(/unknown Active Job class "GhostJob"/, ghost["error_message"])
    assert_empty dead_jobs.select { |job| jids.include?(job["jid"]) }
  end

  it "runs no class but an Active Job class through the wrapper, " \
    "and no job in another's place" do
    server
    wrapper = ActiveJob::QueueAdapters::JigglerAdapter::JobWrapper.name
    forged = [
      {
        "name" => "Tempfile",
        "wrapper" => wrapper,
        "args" => [],
        "active_job" => {"job_class" => "Tempfile"}
      },
      {"name" => "DepositJob", "wrapper" => "LedgerJob", "args" => ["forged"]}
    ].map do |fields|
      fields.merge(
        "jid" => SecureRandom.hex(12), "queue" => "default", "retries" => 0
      )
    end
    Jiggler.store.push("default", forged.map { |fields| JSON.generate(fields) })
    dead = wait_for(
      timeout: 15,
      message: "the forged jobs in the dead set\n#{server.log[-3000..]}"
    ) do
      jobs = dead_jobs.select do |job|
        forged.any? { |fields| fields["jid"] == job["jid"] }
      end
      jobs if jobs.size == 2
    end
    assert_equal [
      "LedgerJob is not a job wrapper", "Tempfile is not an Active Job class"
    ],
      dead.map { |job| job["error_message"] }.sort
    refute Event.exists?(kind: "ledger", note: "forged"),
      "LedgerJob ran in DepositJob's place"
  end

  it "logs the start and end of each job as JSON lines with its fields, " \
    "where the app logs to standard output" do
    development = RailsApp.development_server
    jid = LedgerJob.with_options(queue: "dev").enqueue("json")
    done = wait_for(
      timeout: 20, message: "the done line\n#{development.log[-3000..]}"
    ) do
      json_lines(development).find do |line|
        line["event"] == "done" && line["jid"] == jid
      end
    end
    start = json_lines(development).find do |line|
      line["event"] == "start" && line["jid"] == jid
    end
    assert_equal ["LedgerJob", "dev", "0", "DEBUG"],
      start.values_at("class", "queue", "attempt", "level")
    assert_equal ["LedgerJob", "dev", "0"],
      done.values_at("class", "queue", "attempt")
    assert_kind_of Float, done["duration"]
    refute development.log.lines.any? { |line|
      line.include?("jid=#{jid}") && !line.start_with?("{")
    }
  end

  it "puts a job the shutdown stops back in its queue, " \
    "without an error report, and runs it again once" do
    first = started(RailsApp.start_server("-c", "2", "-q", "slow", "-t", "1"))
    jid = SlowJob.perform_later("s1", 60).provider_job_id
    wait_for(timeout: 20, message: "the slow job's start\n#{first.log}") do
      Event.exists?(kind: "slow-start", note: "s1")
    end
    first.signal("TERM")
    assert_equal 0, first.wait(timeout: 30), first.log
    requeued = json_lines(first).select { |line| line["event"] == "requeued" }
    assert_equal [["WARN", "SlowJob", jid]],
      requeued.map { |line| line.values_at("level", "class", "jid") }
    assert_empty RailsApp.events.select { |event|
      event["event"] == "report" && event["error"] == "Async::Stop"
    }
    second = started(RailsApp.start_server("-c", "2", "-q", "slow"))
    wait_for(timeout: 20, message: "the second run\n#{second.log}") do
      Event.exists?(kind: "slow-done", note: "s1")
    end
    assert_equal [2, 1], %w[slow-start slow-done].map { |kind|
      Event.where(kind: kind, note: "s1").count
    }
  ensure
    [first, second].compact.each(&:kill)
  end

  it "reloads edited job code in development, between jobs" do
    app = File.join(RailsApp::TMP, "app-copy")
    FileUtils.cp_r(RailsApp::DIR, app)
    process = ServerProcess.new(
      "-r", app, "-c", "2", "-q", "reload",
      namespace: RailsApp::NAMESPACE,
      env: RailsApp.env.merge("RAILS_ENV" => "development")
    ).start
    wait_for(timeout: 60, message: "the server start\n#{process.log}") do
      process.log.include?("started:")
    end
    probe = ->(note) { ProbeJob.with_options(queue: "reload").enqueue(note) }
    probe.call("before")
    wait_for(message: "the first probe\n#{process.log}") do
      Event.where(kind: "probe").where("note LIKE 'before %'").exists?
    end
    file = File.join(app, "app", "jobs", "probe_job.rb")
    File.write(file, File.read(file).sub("VERSION = 1", "VERSION = 2"))
    # newer than the copy the server loaded (Rails ignores times in the future)
    File.utime(Time.now, Time.now, file)
    probe.call("after")
    note = wait_for(message: "the second probe\n#{process.log}") do
      Event.where(kind: "probe").where("note LIKE 'after %'").pick(:note)
    end
    assert_equal "after development true true false 2", note
  ensure
    process&.kill
  end

  it "refuses to start without the fiber isolation level, " \
    "saying what to change" do
    process = RailsApp.start_server(env: {"APP_ISOLATION_LEVEL" => "thread"})
    assert_equal 1, process.wait(timeout: 60)
    assert_includes process.log,
      "jiggler: jiggler runs jobs on fibers: add " \
      "`config.active_support.isolation_level = :fiber` " \
      "to config/application.rb (it is :thread)"
  end

  it "refuses to start with a connection pool smaller than the concurrency, " \
    "saying what to change" do
    process = RailsApp.start_server("-c", "20", env: {"APP_POOL" => "5"})
    assert_equal 1, process.wait(timeout: 60)
    assert_includes process.log,
      "the production database pool (5) is smaller than jiggler's " \
      "concurrency (20): set `pool: 20` for production in " \
      "config/database.yml, or run jiggler with -c 5"
  end
end

# frozen_string_literal: true

require "test_helper"
require "json"
require "tmpdir"
require "fileutils"

# End-to-end tests of a running server: jobs, concurrency, priorities, scheduling, retries, bad jobs and stats.
describe "jiggler server" do
  before { @tmp = Dir.mktmpdir("jiggler-server-test") }
  after do
    FileUtils.rm_rf(@tmp)
  end

  # A server that refreshes its summary entry twice a second, so that running jobs show up without a 5 s wait.
  def start_fast_server(*flags)
    config = File.join(@tmp, "fast.yml")
    File.write(config, "stats_interval: 0.5\n")
    start_server("-C", config, *flags)
  end

  # Payloads in the retry or dead set, parsed.
  def set_jobs(set)
    store.set_entries(set).map { |payload, _score| JSON.parse(payload) }
  end

  # Makes every retry due now, as if its back-off had passed; the server's scheduler then moves it to its queue.
  def make_retries_due
    key = store.keys.retry
    redis.call("ZRANGE", key, 0, -1).each do |member|
      redis.call("ZADD", key, "XX", Time.now.to_f, member)
    end
  end

  def raw_job(name, args, **extra)
    JSON.generate({
      "jid" => SecureRandom.hex(12),
      "name" => name,
      "args" => args,
      "queue" => "default"
    }.merge(extra))
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  def process_keys
    %w[
      heartbeat rss current_jobs name concurrency timeout queues
      poller_enabled started_at pid hostname quiet
    ]
  end

  it "runs enqueued jobs and counts them" do
    RecordJob.enqueue_bulk((1..50).zip)
    start_server
    wait_for(message: "50 jobs") { recorded.size == 50 }
    assert_equal (1..50).map(&:to_s).sort, recorded.sort
    wait_for(message: "processed count") do
      Jiggler.summary["processed_count"] == 50
    end
    assert_empty Jiggler.summary["queues"]
  end

  it "runs jobs enqueued while it is idle" do
    start_server
    RecordJob.enqueue("late")
    wait_for(message: "the job enqueued after start") { recorded == ["late"] }
  end

  it "runs no more jobs at once than its concurrency" do
    SlowJob.enqueue_bulk((1..5).map { |n| [n, 0.3] })
    start_server("-c", "2")
    wait_for(message: "5 slow jobs") do
      recorded.count { |entry| entry.start_with?("done:") } == 5
    end
    running = 0
    most = recorded
      .map { |entry| running += entry.start_with?("start:") ? 1 : -1 }
      .max
    assert_equal 2, most,
      "at most 2 jobs should run at once, and 2 should: #{recorded.inspect}"
    assert_equal %w[start start done],
      recorded.first(3).map { |entry| entry.split(":").first }
  end

  it "empties higher priority queues before lower ones" do
    RecordJob.with_options(queue: "low")
      .enqueue_bulk((1..5).map { |n| ["low-#{n}"] })
    RecordJob.with_options(queue: "high")
      .enqueue_bulk((1..5).map { |n| ["high-#{n}"] })
    # Low is named first on the command line: the priority, not the order, decides.
    start_server("-c", "1", "-q", "low,1", "-q", "high,10")
    wait_for(message: "10 jobs") { recorded.size == 10 }
    assert_equal (1..5).map { |n| "high-#{n}" }, recorded.first(5)
    assert_equal (1..5).map { |n| "low-#{n}" }, recorded.last(5)
  end

  it "takes a high priority job enqueued while busy before the waiting " \
    "low priority ones" do
    SlowJob.with_options(queue: "low")
      .enqueue_bulk([["low-1", 0.6], ["low-2", 0.1], ["low-3", 0.1]])
    start_server("-c", "1", "-q", "high,10", "-q", "low,1")
    wait_for(message: "the first low job") do
      recorded.include?("start:low-1")
    end
    RecordJob.with_options(queue: "high").enqueue("high")
    wait_for(message: "every job") { recorded.size == 7 }
    assert_equal %w[
      start:low-1 done:low-1 high
      start:low-2 done:low-2
      start:low-3 done:low-3
    ], recorded
  end

  it "runs a scheduled job on its own queue about when it is due" do
    start_server("-q", "other")
    enqueued = now
    RecordJob.with_options(queue: "other").enqueue_in(1, "later")
    assert_equal 1, Jiggler.summary["scheduled_jobs_count"]
    wait_for(timeout: 5, message: "the scheduled job") { recorded == ["later"] }
    ran = now - enqueued
    assert_operator ran, :>=, 1.0, "ran before it was due"
    assert_operator ran, :<=, 2.5, "ran more than ~1 s after it was due"
    assert_equal 0, Jiggler.summary["scheduled_jobs_count"]
  end

  it "keeps every option of chained with_options calls" do
    start_server("-q", "other")
    jid = FailingJob.with_options(queue: "other")
      .with_options(retries: 0)
      .enqueue("chained")
    RecordJob.with_options(retries: 1)
      .with_options(queue: "other")
      .enqueue_in(0.5, "chained-later")
    wait_for(message: "the job in the dead set") do
      Jiggler.summary["dead_jobs_count"] == 1
    end
    job = set_jobs(:dead).first
    assert_equal jid, job["jid"]
    assert_equal "other", job["queue"]
    assert_equal 0, job["retries"]
    assert_equal 1, job["attempt"]
    assert_equal 0, Jiggler.summary["retry_jobs_count"]
    wait_for(timeout: 5, message: "the scheduled chained job") do
      recorded.include?("chained-later")
    end
    assert_equal ["chained-later", "fail:chained"], recorded.sort
  end

  it "retries a failing job, then moves it to the dead set after its retries" do
    server = start_server
    jid = FailingJob.enqueue("again")
    wait_for(message: "the first retry") { set_jobs(:retry).first }
    job = set_jobs(:retry).first
    assert_equal jid, job["jid"]
    assert_equal 1, job["attempt"]
    assert_equal "ArgumentError", job["error_class"]
    assert_equal "failed on purpose: again", job["error_message"]
    assert_kind_of Array, job["error_backtrace"]
    assert_match(/jobs\.rb:\d+:in `perform'/, job["error_backtrace"].first)
    assert_operator store.set_entries(:retry).first.last.to_f,
      :>,
      Time.now.to_f + 5,
      "a retry waits before it runs again"

    make_retries_due
    wait_for(message: "the second retry") do
      set_jobs(:retry).first&.fetch("attempt") == 2
    end
    make_retries_due
    wait_for(message: "the dead job") { set_jobs(:dead).any? }

    dead = set_jobs(:dead)
    assert_equal 1, dead.size
    assert_equal jid, dead.first["jid"]
    assert_equal 3, dead.first["attempt"]
    assert_equal "ArgumentError", dead.first["error_class"]
    assert_equal ["fail:again"] * 3, recorded
    summary = Jiggler.summary
    assert_equal 0, summary["retry_jobs_count"]
    assert_equal 3, summary["failures_count"]
    assert_equal 0, summary["processed_count"]
    (1..3).each do |attempt|
      assert_match(
        /ERROR: .*FailingJob jid=#{jid} queue=default attempt=#{attempt} ArgumentError: failed on purpose: again/,
        server.log
      )
    end
  end

  it "records bad jobs as failures with a clear error and goes on " \
    "with good ones" do
    server = start_server
    unknown = raw_job("NoSuchJob", [1], "retries" => 3)
    arity = raw_job("RecordJob", [], "retries" => 3)
    store.push("default", [unknown, arity, "{not json"])
    wait_for(message: "three failures") do
      Jiggler.summary.values_at("retry_jobs_count", "dead_jobs_count").sum == 3
    end
    failed = set_jobs(:retry) + set_jobs(:dead)

    no_such = failed.find { |job| job["jid"] == JSON.parse(unknown)["jid"] }
    assert no_such, "the unknown class should be in the retry or dead set"
    assert_match(/UnknownJobError/, no_such["error_class"])
    assert_match(/NoSuchJob/, no_such["error_message"])

    wrong_arity = failed.find { |job| job["jid"] == JSON.parse(arity)["jid"] }
    assert wrong_arity,
      "the job with the wrong arguments should be in the retry or dead set"
    assert_match(/ArityError/, wrong_arity["error_class"])
    assert_match(
      /wrong number of arguments.*given 0, expected 1/,
      wrong_arity["error_message"]
    )

    malformed = set_jobs(:dead).find { |job| job["raw"] == "{not json" }
    assert malformed,
      "the malformed payload should be in the dead set, " \
      "kept as it was: #{failed.inspect}"
    assert_match(/MalformedError/, malformed["error_class"])
    assert_match(/not valid JSON/, malformed["error_message"])

    [unknown, arity].each do |payload|
      assert_match(
        /ERROR: .*#{JSON.parse(payload)["name"]} jid=#{JSON.parse(payload)["jid"]} queue=default attempt=1 /,
        server.log
      )
    end
    assert_match(/ERROR: .*unreadable job in queue default/, server.log)

    RecordJob.enqueue("good")
    wait_for(message: "the good job") { recorded == ["good"] }
    assert server.running?
    assert_equal 3, Jiggler.summary["failures_count"]
  end

  it "does not run a class that is not a Jiggler::Job" do
    start_server
    store.push("default", [raw_job("PlainClass", [], "retries" => 0)])
    wait_for(message: "the dead job") { set_jobs(:dead).any? }
    assert_match(/not a Jiggler::Job/, set_jobs(:dead).first["error_message"])
    assert_empty recorded
  end

  describe "summary" do
    it "lists the running server with its settings and current jobs" do
      server = start_fast_server("-c", "2", "-t", "3", "-q", "slow")
      jid = SlowJob.with_options(queue: "slow").enqueue("long", 30)
      processes = wait_for(message: "the running job in the summary") do
        all = Jiggler.summary["processes"]
        all if all.size == 1 && all.values.first["current_jobs"].any?
      end
      id, info = processes.first
      assert_equal process_keys.sort, info.keys.sort
      assert_equal server.pid.to_s, info["pid"]
      assert_equal "2", info["concurrency"]
      assert_equal 3.0, Float(info["timeout"])
      assert_equal "slow", info["queues"]
      assert_equal true, info["poller_enabled"]
      assert_match(/\Ajiggler:svr:\h+\z/, info["name"])
      assert id.start_with?(info["name"]), "the process id starts with its name"
      assert_in_delta Time.now.to_f, info["heartbeat"], 5
      assert_in_delta Time.now.to_i, Integer(info["started_at"]), 30
      assert_operator info["rss"], :>, 0
      refute_empty info["hostname"]

      assert_equal 1, info["current_jobs"].size
      current = info["current_jobs"].values.first
      assert_equal "slow", current["queue"]
      assert_equal ["SlowJob", jid, ["long", 30]],
        [current["class"], current["jid"], JSON.parse(current["args"])]
    end

    it "counts processed jobs and failures" do
      start_server
      RecordJob.enqueue_bulk([[1], [2], [3]])
      FailingJob.enqueue_bulk([["x"], ["y"]])
      wait_for(message: "3 processed and 2 failures") do
        Jiggler.summary.values_at("processed_count", "failures_count") == [3, 2]
      end
      summary = Jiggler.summary
      assert_equal 2, summary["retry_jobs_count"]
      assert_equal 0, summary["dead_jobs_count"]
      assert_equal({}, summary["queues"])
    end
  end
end

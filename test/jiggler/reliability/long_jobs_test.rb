# frozen_string_literal: true

require_relative "helper"
require_relative "../../fixtures/long_jobs"

# Cancel, timeout, snooze and progress with real `jiggler` processes on each store: the job runs on another process
# than the one that cancels it, and what the jobs record (with the time) says when they were stopped.
StoreTarget.describe_each "long jobs" do
  include ReliabilityHelper

  def long_fixture = "./test/fixtures/long_jobs.rb"

  def start_long(*flags, env: {})
    env = @target.server_env.merge(
      "JIGGLER_TEST_RECORD_FILE" => @record,
      "JIGGLER_TEST_POLL_INTERVAL" => "1"
    ).merge(env)
    server = ServerProcess.new(
      "-r", long_fixture, *flags, namespace: @namespace, env: env
    ).start
    @servers << server
    wait_until_started(server)
    server
  end

  # Runs `jiggler ARGS -r FIXTURE` (an admin command) on the test's store until it exits: [status, output].
  def run_command(*args)
    env = @target.server_env.merge("JIGGLER_TEST_RECORD_FILE" => @record)
    process = ServerProcess.new(
      *args, "-r", long_fixture, namespace: @namespace, env: env
    ).start
    @servers << process
    status = process.wait(timeout: 20)
    assert status, "jiggler #{args.join(" ")} did not exit:\n#{process.log}"
    [status, process.log]
  end

  def dead_jobs = set_jobs(:dead)

  def percentile(values, fraction)
    values.sort[((values.size - 1) * fraction).round]
  end

  it "cancels a queued, a scheduled and a retrying job: none runs, " \
    "each ends in the dead set marked cancelled" do
    queued = LongJobs::SleepJob.with_options(queue: "parked").enqueue("q", 1)
    scheduled = LongJobs::SleepJob.enqueue_in(600, "s", 1)
    retrying = "r" * 24
    @target.plant(store, :retry, Time.now.to_f + 600, JSON.dump(
      "jid" => retrying,
      "name" => "LongJobs::SleepJob",
      "args" => ["r", 1],
      "queue" => "default",
      "attempt" => 1
    ))
    results = [queued, scheduled, retrying].map do |jid|
      Jiggler.cancel(jid, by: "ops")
    end
    assert_equal %i[removed removed removed], results
    assert_equal [queued, retrying, scheduled].sort,
      dead_jobs.map { |job| job["jid"] }.sort
    assert(dead_jobs.all? { |job| job.dig("cancelled", "by") == "ops" })
    summary = Jiggler.summary
    assert_equal [0, 0, 0, {}], summary.values_at(
      "scheduled_jobs_count", "retry_jobs_count", "failures_count", "queues"
    )
    start_long("-q", "parked")
    assert_equal :requested, Jiggler.cancel("f" * 24),
      "a job that is nowhere is only requested"
    refute_includes recorded, "start:q"
  end

  it "races a server that fetches while jobs are cancelled: " \
    "each is taken out unrun or fetched, never both, none lost" do
    values = Array.new(200) { |index| "race#{index}" }
    jids = values.to_h do |value|
      [value, LongJobs::SleepJob.enqueue(value, 0.05)]
    end
    start_long("-c", "5")
    recorded_at("start:race0")
    # In the order the server takes them: the first ones are running or held, the later ones still queued.
    results = jids.to_h do |value, jid|
      [value, Jiggler.cancel(jid, by: "race")]
    end
    finished = -> do
      recorded.select { |entry| entry.start_with?("done:") }
        .map { |entry| entry.delete_prefix("done:") }
    end
    dead = wait_for(timeout: 30, message: "every job cancelled or done") do
      cancelled = dead_jobs.to_h { |job| [job["args"].first, job] }
      cancelled if (cancelled.keys | finished.call).sort == values.sort
    end
    removed, requested = values.partition { |value| results[value] == :removed }
    refute_empty removed, "no job was still waiting: no race"
    refute_empty requested, "no job was fetched first: no race"
    assert_empty finished.call & dead.keys,
      "a job both ran to its end and was cancelled"
    assert_equal values.size, dead_jobs.size + finished.call.size,
      "each job ends once"
    assert_empty(
      removed.select { |value| recorded.include?("start:#{value}") },
      "a job taken out waiting also ran"
    )
    assert(
      removed.all? { |value| dead[value]&.dig("cancelled", "by") == "race" },
      "a job taken out is dead, marked"
    )
    assert(
      dead.values.all? do |job|
        job.dig("cancelled", "by") == "race" && !job.key?("error_class")
      end
    )
    assert_equal [0, 0, {}],
      Jiggler.summary.values_at("retry_jobs_count", "failures_count", "queues")
  end

  it "stops a running job on another process within 1 s (p99 of 20), " \
    "its ensure run, marked cancelled" do
    start_long("-c", "5")
    latencies = 20.times.map do |index|
      jid = LongJobs::SleepJob.enqueue(index.to_s, 60)
      recorded_at("start:#{index}")
      sent = Time.now.to_f
      assert_equal :requested, Jiggler.cancel(jid, by: "test")
      recorded_at("ensure:#{index}") - sent
    end
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    puts format(
      "\ncancel latency on %s: p50 %.1f ms, p99 %.1f ms, max %.1f ms " \
        "(20 cancels, cancel to ensure)",
      target_name, p50 * 1000, p99 * 1000, latencies.max * 1000
    )
    assert_operator p99, :<, 1.0
    wait_for(message: "20 cancelled jobs in the dead set") do
      dead_jobs.size == 20
    end
    assert(
      dead_jobs.all? do |job|
        job.dig("cancelled", "by") == "test" && !job.key?("error_class")
      end
    )
    assert_equal [0, 0],
      Jiggler.summary.values_at("retry_jobs_count", "failures_count")
    refute(recorded.any? { |entry| entry.start_with?("done:") })
  end

  it "lets a job that computes without I/O see cancelled? " \
    "and end as cancelled" do
    start_long
    jid = LongJobs::SpinJob.enqueue("cpu", 20)
    recorded_at("start:cpu")
    sent = Time.now.to_f
    Jiggler.cancel(jid, by: "test")
    seen = recorded_at("seen:cpu") - sent
    puts format(
      "\nCPU-bound job on %s saw cancelled? %.1f ms after the cancel",
      target_name, seen * 1000
    )
    assert_operator seen, :<, 1.0
    wait_for(message: "the job in the dead set") do
      dead_jobs.any? { |job| job["jid"] == jid && job["cancelled"] }
    end
  end

  it "stops a job past its timeout, fails it with Jiggler::JobTimeout " \
    "and retries it" do
    start_long("-c", "5")
    jids = 5.times.map do |index|
      LongJobs::SleepJob.with_options(timeout: 0.5).enqueue("t#{index}", 30)
    end
    overshoots = 5.times.map do |index|
      recorded_at("ensure:t#{index}") - recorded_at("start:t#{index}") - 0.5
    end
    puts format(
      "\ntimeout overshoot on %s (I/O-bound, timeout 0.5 s): " \
        "max %.1f ms, mean %.1f ms",
      target_name,
      overshoots.max * 1000,
      overshoots.sum / overshoots.size * 1000
    )
    assert_operator overshoots.max, :<, 0.1
    # The timeout counts from just before the job's first line, where "start" is recorded: a few µs early at most.
    assert_operator overshoots.min, :>, -0.01
    retries = wait_for(message: "5 retries") do
      set_jobs(:retry).then { |jobs| jobs if jobs.size == 5 }
    end
    assert_equal jids.sort, retries.map { |job| job["jid"] }.sort
    assert(
      retries.all? do |job|
        job["error_class"] == "Jiggler::JobTimeout" && job["attempt"] == 1
      end
    )
  end

  it "runs a snoozed job again after its delay, " \
    "without using an attempt or counting a failure" do
    start_long
    jid = LongJobs::SnoozeJob.enqueue("z", 2)
    first = recorded_at("try:z")
    scheduled = wait_for(message: "the snoozed job scheduled") do
      set_jobs(:scheduled).first
    end
    assert_equal [jid, 1, nil], scheduled.values_at("jid", "snoozes", "attempt")
    ran = recorded_at("run:z", timeout: 10)
    puts format(
      "\nsnoozed job on %s ran again %.2f s after its first run (snooze 2 s)",
      target_name, ran - first
    )
    assert_operator ran - first, :>=, 2.0
    assert_equal 2, recorded_count("try:z")
    assert_equal [0, 0, 0], Jiggler.summary.values_at(
      "failures_count", "retry_jobs_count", "dead_jobs_count"
    )
  end

  it "cancels with `jiggler cancel JID`: a queued job at once, " \
    "a running one on its server" do
    queued = LongJobs::SleepJob.with_options(queue: "parked").enqueue("q", 1)
    status, output = run_command("cancel", queued)
    assert_equal(
      [
        0,
        "cancelled job #{queued}: it was waiting, and is now in the dead set\n"
      ],
      [status, output]
    )
    start_long
    running = LongJobs::SleepJob.enqueue("r", 60)
    recorded_at("start:r")
    status, output = run_command("cancel", running, "--json")
    assert_equal [0, {"jid" => running, "result" => "requested"}],
      [status, JSON.parse(output)]
    recorded_at("ensure:r", timeout: 2)
    cancelled = wait_for(message: "both cancelled") do
      dead_jobs.then { |jobs| jobs if jobs.size == 2 }
    end
    assert(
      cancelled.all? do |job|
        job.dig("cancelled", "by").start_with?("jiggler cancel (")
      end
    )
    assert_equal 1, run_command("cancel").first, "a jid is required"
  end

  it "shows a running job's progress in the processes Jiggler.summary lists, " \
    "within a heartbeat" do
    start_long
    jid = LongJobs::ProgressJob.enqueue("p", 30)
    reported = recorded_at("reported:p")
    progress = wait_for(timeout: 5, message: "the progress in the summary") do
      Jiggler.summary["processes"].values
        .flat_map { |info| info["current_jobs"].values }
        .find { |work| work["jid"] == jid && work["progress"] }
        &.fetch("progress")
    end
    puts format(
      "\nprogress on %s seen through Jiggler.summary %.2f s after the report",
      target_name, Time.now.to_f - reported
    )
    assert_equal(
      {"fraction" => 0.42, "message" => "rows 4,200 of 10,000"},
      progress
    )
    status = Jiggler.status(jid)
    assert_equal ["running", "LongJobs::ProgressJob", "default", progress],
      status.values_at("state", "class", "queue", "progress")
    assert_includes Jiggler.summary["processes"].keys, status["process"]
    Jiggler.cancel(jid)
  end

  it "tells where a job is: queued, scheduled, retry, dead, cancelled, " \
    "done, failed or unknown" do
    job = ->(jid, extra = {}) do
      Jiggler::Payload.dump({
        "jid" => jid,
        "name" => "LongJobs::ProgressJob",
        "args" => [],
        "queue" => "default"
      }.merge(extra))
    end
    queued = LongJobs::ProgressJob.enqueue("q", 1)
    scheduled = LongJobs::ProgressJob.enqueue_in(600, "s", 1)
    @target.plant(
      store, :retry, Time.now.to_f + 60,
      job.call("r" * 24, "error_class" => "IOError", "error_message" => "lost")
    )
    @target.plant(
      store, :dead, Time.now.to_f,
      job.call(
        "d" * 24, "error_class" => "ArgumentError", "error_message" => "bad"
      )
    )
    cancelled = LongJobs::ProgressJob.enqueue("c", 1)
    Jiggler.cancel(cancelled, by: "ops")
    store.save_results([
      ["o" * 24, Jiggler::Result.value("X", 42)],
      ["f" * 24, Jiggler::Result.error("KeyError", "gone")]
    ], 60)
    assert_equal ["queued", "default", "LongJobs::ProgressJob", 0],
      Jiggler.status(queued).values_at("state", "queue", "class", "position")
    assert_equal "scheduled", Jiggler.status(scheduled)["state"]
    assert_in_delta Time.now.to_f + 600, Jiggler.status(scheduled)["at"], 5
    assert_equal ["retry", "IOError", "lost"],
      Jiggler.status("r" * 24)
        .values_at("state", "error_class", "error_message")
    assert_equal ["dead", "ArgumentError"],
      Jiggler.status("d" * 24).values_at("state", "error_class")
    assert_equal ["cancelled", "ops"],
      Jiggler.status(cancelled).values_at("state", "by")
    assert_equal({"state" => "done"}, Jiggler.status("o" * 24))
    assert_equal ["failed", "KeyError"],
      Jiggler.status("f" * 24).values_at("state", "error_class")
    assert_equal({"state" => "unknown"}, Jiggler.status("u" * 24))
    assert_raises(ArgumentError) { Jiggler.status(nil) }
  end
end

# frozen_string_literal: true

require_relative "helper"

# Jobs that cannot run, or that break what runs them, end in the dead set after a bounded number of attempts with a
# clear error; nothing stays in flight, nothing bounces between places forever, and the server goes on with the rest.
# (A job that kills its own process is in orphan_recovery_test.rb: it is dead after max_crashes deliveries.)
#
# The servers run with one worker: a job that broke its worker would stop everything after it.
StoreTarget.describe_each("poison jobs") do
  include ReliabilityHelper

  def raw_job(name, args, **extra)
    JSON.generate({
      "jid" => SecureRandom.hex(12),
      "name" => name,
      "args" => args,
      "queue" => "default"
    }.merge(extra))
  end

  def jid_of(payload) = JSON.parse(payload)["jid"]

  # The processes (live or dead) that hold jobs in flight.
  def holders
    (store.processes.keys + store.dead_processes)
      .reject { |process| store.in_flight_count(process).zero? }
  end

  # Makes every retry due at once, as if its back-off had passed, until `block` is true.
  def retry_until(timeout: 8, message: "condition", &block)
    wait_for(timeout: timeout, message: message) do
      store.enqueue_due(Time.now.to_f + 10**6) do |from, payload|
        Jiggler::JobRules.due(from, payload, Time.now.to_f)
      end
      block.call
    end
  end

  # After the poison: a good job still runs, nothing is left waiting or in flight, the server is alive.
  def assert_still_working(server)
    Reliability::RecordJob.enqueue("good")
    wait_for(timeout: 5, message: "a good job after the poison ones") do
      recorded_count("run:good") == 1
    end
    wait_for(message: "nothing left in flight") { holders.empty? }
    assert server.running?
    assert_empty store.queue_sizes
    assert_equal 0, Jiggler.summary["retry_jobs_count"]
  end

  it "sends malformed payloads straight to the dead set, keeping them" do
    server = start_reliable("-c", "1")
    payloads = [
      "{not json", "", "[]", "null", "42", "\xFF\xFE\x00binary".b,
      '{"jid":"x","name":"Reliability::RecordJob"',
      '{"jid":"x","args":[]}',
      '{"jid":"x","name":"Reliability::RecordJob","args":"one"}',
      '{"name":"N","args":[],"jid":7}'
    ]
    store.push("default", payloads)
    wait_for(message: "every malformed payload dead") do
      Jiggler.summary["dead_jobs_count"] == payloads.size
    end

    dead = set_jobs(:dead)
    assert_equal ["Jiggler::Payload::MalformedError"],
      dead.map { |job| job["error_class"] }.uniq
    assert_equal(
      payloads.map { |payload| payload.dup.force_encoding("UTF-8").scrub }.sort,
      dead.map { |job| job["raw"] }.sort
    )
    assert(
      dead.all? do |job|
        job["error_message"].match?(/payload is not (valid JSON|a jiggler job)/)
      end,
      dead.map { |job| job["error_message"] }
    )
    assert_equal payloads.size, Jiggler.summary["failures_count"],
      "one attempt each"
    assert_still_working(server)
  end

  it "retries unknown classes and wrong arities a bounded number of times, " \
    "then kills them with a clear error" do
    server = start_reliable("-c", "1")
    cases = {
      raw_job("NoSuchJob", [1]) =>
        [26, "Jiggler::UnknownJobError", /unknown job class "NoSuchJob"/],
      raw_job("String", [], "retries" => 2) =>
        [3, "Jiggler::UnknownJobError", /String is not a Jiggler::Job/],
      raw_job("Reliability", [], "retries" => 1) =>
        [2, "Jiggler::UnknownJobError", /Reliability is not a Jiggler::Job/],
      raw_job("Reliability::RecordJob", [], "retries" => 3) =>
        [4, "Jiggler::Server::Processor::ArityError", /given 0, expected 1/],
      raw_job("Reliability::SleepJob", [1, 2, 3], "retries" => 0) =>
        [1, "Jiggler::Server::Processor::ArityError", /given 3, expected 2/]
    }
    store.push("default", cases.keys)
    retry_until(message: "every bad job dead") do
      Jiggler.summary["dead_jobs_count"] == cases.size
    end

    dead = set_jobs(:dead).to_h { |job| [job["jid"], job] }
    cases.each do |payload, (attempts, error_class, message)|
      job = dead.fetch(jid_of(payload))
      assert_equal [attempts, error_class],
        job.values_at("attempt", "error_class"), payload
      assert_match message, job["error_message"]
    end
    assert_equal cases.values.sum(&:first), Jiggler.summary["failures_count"],
      "no attempt more than the retries allow"
    assert_still_working(server)
  end

  it "records exceptions that are not StandardErrors and keeps its workers" do
    server = start_reliable("-c", "1")
    kinds = Reliability::RaiseJob::KINDS.keys - ["async_stop"]
    Reliability::RaiseJob.with_options(retries: 0).enqueue_bulk(kinds.zip)
    wait_for(message: "every raising job dead") do
      Jiggler.summary["dead_jobs_count"] == kinds.size
    end

    dead = set_jobs(:dead).to_h { |job| [job["args"].first, job] }
    expected = {
      "exception" => "Exception",
      "exit" => "SystemExit",
      "interrupt" => "Interrupt",
      "no_memory" => "NoMemoryError",
      "script" => "NotImplementedError",
      "stack" => "SystemStackError",
      "signal" => "SignalException",
      "security" => "SecurityError",
      "throw" => "UncaughtThrowError",
      "broken_message" => "Reliability::BrokenMessageError"
    }
    assert_equal expected, dead.transform_values { |job| job["error_class"] }
    assert_match(
      /BrokenMessageError#message raised RuntimeError/,
      dead["broken_message"]["error_message"]
    )
    assert_equal kinds.map { |kind| "raise:#{kind}" }.sort, recorded.sort,
      "each ran once"
    assert_still_working(server)
  end

  # Async::Stop is how a server stops its worker fibers; a job that raises it itself was not stopped by the server.
  it "treats a job that raises Async::Stop as a failed job, " \
    "not as a worker stop" do
    server = start_reliable("-c", "1")
    jid = Reliability::RaiseJob.with_options(retries: 0).enqueue("async_stop")
    Reliability::RecordJob.enqueue("next")
    wait_for(
      timeout: 5,
      message: "the job after the one that raised Async::Stop"
    ) { recorded_count("run:next") == 1 }
    dead = set_jobs(:dead)
    assert_equal [[jid, "Async::Stop"]],
      dead.map { |job| job.values_at("jid", "error_class") }
    assert_still_working(server)
  end

  it "survives payload fields of the wrong type" do
    server = start_reliable("-c", "1")
    payloads = [
      raw_job("NoSuchJob", [], "attempt" => [], "retries" => 1),
      raw_job("NoSuchJob", [], "attempt" => true, "retries" => 1),
      raw_job("NoSuchJob", [], "attempt" => "x", "retries" => "many"),
      raw_job("NoSuchJob", [], "retries" => -1),
      raw_job(
        "NoSuchJob", [],
        "failed_at" => "yesterday", "error_backtrace" => 5, "retries" => 0
      )
    ]
    store.push("default", payloads)
    retry_until(message: "every bad job dead") do
      Jiggler.summary["dead_jobs_count"] == payloads.size
    end
    assert_equal payloads.map { |payload| jid_of(payload) }.sort,
      set_jobs(:dead).map { |job| job["jid"] }.sort
    assert_still_working(server)
  end

  it "sends garbage in the retry and scheduled sets to the dead set, " \
    "not around in circles" do
    server = start_reliable("-c", "1")
    @target.plant(store, :retry, Time.now.to_f, "{retry garbage")
    @target.plant(store, :scheduled, Time.now.to_f, "[1, 2]")
    wait_for(message: "the garbage dead") do
      Jiggler.summary["dead_jobs_count"] == 2
    end
    assert_equal ["[1, 2]", "{retry garbage"],
      set_jobs(:dead).map { |job| job["raw"] }.sort
    assert_equal 0, Jiggler.summary["scheduled_jobs_count"]
    assert_still_working(server)
  end

  # What a process killed with kill -9 leaves behind: its registration (expired) and its in-flight record, here with
  # a good job, an unreadable one and one whose crash count is not a number.
  it "recovers the jobs of a dead process " \
    "even when some of them are malformed" do
    dead_process = "jiggler:svr:000000000000:1:25:default:1:0:1:gone"
    good = raw_job("Reliability::RecordJob", ["orphan"])
    odd = raw_job("Reliability::RecordJob", ["odd"], "crashes" => [])
    store.push("default", [good, "{unreadable", odd])
    hold(dead_process, "default", 3)
    register_dead(dead_process)
    assert_equal 3, store.in_flight_count(dead_process)

    server = start_reliable("-c", "1", recovery_timeout: 1)
    wait_for(timeout: 5, message: "the orphans recovered") do
      recorded_count("run:orphan") == 1 && recorded_count("run:odd") == 1
    end
    wait_for(message: "the dead process forgotten") do
      store.in_flight_count(dead_process).zero? &&
        store.dead_processes.empty? &&
        store.processes.keys == [server_id(server)]
    end
    assert_equal ["{unreadable"], set_jobs(:dead).map { |job| job["raw"] }
    assert_still_working(server)
  end
end

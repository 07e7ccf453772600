# frozen_string_literal: true

require "test_helper"
require "async"
require "jiggler/server/processor"
require "jiggler/server/executions"
require "jiggler/store/fetched"
require "jiggler/store/cancel_request"

# Jobs for the executions tests.
module ExecutionsTest
  ENDED = []

  class Sleeper
    include Jiggler::Job

    def perform(seconds)
      sleep(seconds)
    ensure
      ENDED << jid
    end
  end

  class Snoozer
    include Jiggler::Job

    def perform(seconds) = snooze(seconds)
  end

  class Reporter
    include Jiggler::Job

    def perform
      progress(0.5, "half")
      sleep(10)
    end
  end
end

# Server::Executions with the Processor, in a reactor: a cancel or a timeout ends a job as itself, never as the
# shutdown's stop (which requeues) nor as a failure of the job's own.
describe Jiggler::Server::Executions do
  before { ExecutionsTest::ENDED.clear }

  let(:executions) do
    Jiggler::Server::Executions.new(logger: Logger.new(File::NULL))
  end

  # The shutdown is interrupting: a plain Async::Stop would be the shutdown's.
  let(:processor) do
    Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Logger.new(File::NULL),
      results: store,
      interrupted: -> { true },
      executions: executions
    )
  end

  def payload(name, args, **extra)
    Jiggler::Payload.dump({
      "jid" => "jid-1",
      "name" => name,
      "args" => args,
      "queue" => "default",
      "retries" => 3
    }.merge(extra))
  end

  def request(jid)
    Jiggler::Store::CancelRequest.new(jid: jid, by: "ops", at: Time.now.to_f)
  end

  # Runs the job on a task of its own; yields once it runs; returns what the processor returned.
  def run_job(json)
    Sync do |task|
      task.with_timeout(5) do
        executions.start(parent: task)
        job = task.async do
          processor.call(Jiggler::Store::Fetched.new(1, "default", json))
        end
        yield if block_given?
        job.wait.tap { executions.stop }
      end
    end
  end

  it "ends a cancelled job as cancelled, even while the shutdown " \
    "interrupts jobs, its ensure run" do
    record = run_job(payload("ExecutionsTest::Sleeper", [10])) do
      executions.requested([request("jid-1")])
    end
    job = Jiggler::Payload.load(record.payload)
    assert_equal [:cancelled, "ops", nil],
      [record.set, job.dig("cancelled", "by"), job["error_class"]]
    assert_equal ["jid-1"], ExecutionsTest::ENDED
  end

  it "cancels a job named by an earlier request before it runs" do
    executions.requested([request("jid-1")])
    record = run_job(payload("ExecutionsTest::Sleeper", [10]))
    assert_equal :cancelled, record.set
    assert_empty ExecutionsTest::ENDED, "perform never ran"
  end

  it "fails a job past its timeout with Jiggler::JobTimeout, for a retry" do
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    record = run_job(payload("ExecutionsTest::Sleeper", [10], "timeout" => 0.2))
    assert_in_delta 0.2,
      Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
      0.1
    job = Jiggler::Payload.load(record.payload)
    assert_equal [:retry, "Jiggler::JobTimeout", 1],
      [record.set, job["error_class"], job["attempt"]]
  end

  it "schedules a snoozed job without using an attempt" do
    before = Time.now.to_f
    record = run_job(payload("ExecutionsTest::Snoozer", [30], "attempt" => 2))
    job = Jiggler::Payload.load(record.payload)
    assert_equal [:scheduled, 2, 1],
      [record.set, job["attempt"], job["snoozes"]]
    assert_in_delta before + 30, record.at, 1
  end

  it "keeps the progress a running job reports, by jid, until it ends" do
    run_job(payload("ExecutionsTest::Reporter", [])) do
      assert_equal(
        {"fraction" => 0.5, "message" => "half"},
        executions.progress("jid-1")
      )
      executions.requested([request("jid-1")])
    end
    assert_nil executions.progress("jid-1")
  end
end

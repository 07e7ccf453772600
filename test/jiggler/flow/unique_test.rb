# frozen_string_literal: true

require "test_helper"
require "rbconfig"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Unique jobs across processes: four processes enqueueing the same job 1,000 times each make one; the lock is released
# when the job finishes or starts (by option), and comes back within recovery_timeout when its server is killed. On
# each store.
StoreTarget.describe_each("unique jobs") do
  include FlowServers

  before { @env = target_env }

  def start(env) = start_flow(@env.merge(env), "-q", "default")

  # Four processes enqueue UniqueJob(1, 0) 1,000 times each, all at once; returns how many enqueues wrote a job.
  def race
    # Each child says "r" once it has loaded jiggler, then waits on its pipe for the go.
    script = "require #{File.expand_path(FlowServers::FIXTURE).inspect}; " \
      "$stdout.write('r'); $stdout.flush; " \
      "$stdin.read(1); puts 1_000.times.count { UniqueJob.enqueue(1, 0) }"
    children = Array.new(4) do
      reader, writer = IO.pipe
      go_reader, go = IO.pipe
      pid = Process.spawn(
        {"JIGGLER_TEST_NAMESPACE" => @namespace}.merge(@env),
        RbConfig.ruby, "-Ilib", "-e", script,
        out: writer, in: go_reader
      )
      writer.close
      go_reader.close
      [pid, reader, go]
    end
    children.each do |pid, reader, _|
      assert_equal "r", reader.read(1), "child #{pid} did not load jiggler"
    end
    children.each { |_, _, go| go.write("x") && go.close }
    children.sum { |pid, reader, _| Process.wait(pid) && reader.read.to_i }
  end

  it "makes one job of 4 processes enqueueing the same one 1,000 times" do
    assert_equal 1, race
    assert_equal({"default" => 1}, target_store.queue_sizes)
  end

  it "holds the lock until the job finishes, or until it starts by option" do
    assert UniqueJob.enqueue(1, 3)
    assert_nil UniqueJob.enqueue(1, 3),
      "a second enqueue while the first is queued"
    assert UniqueJob.enqueue(2, 0), "other arguments, another lock"
    assert UniqueUntilStartedJob.enqueue("acme", 3)
    assert_nil UniqueUntilStartedJob.enqueue("acme", 0),
      "same key, other arguments"
    assert UniqueRaising.enqueue(1)
    assert_raises(Jiggler::UniqueJob::ConflictError) do
      UniqueRaising.enqueue(1)
    end
    start({"FLOW_SLOW" => "1"})
    wait_for(message: "the until-started job to start") do
      UniqueUntilStartedJob.enqueue("acme", 0)
    end
    assert_nil UniqueJob.enqueue(1, 3), "a second enqueue while the first runs"
    wait_for(message: "the unique job to finish") { UniqueJob.enqueue(1, 3) }
  end

  it "returns the lock of a job whose server is killed -9, " \
    "within recovery_timeout" do
    slow = start({"FLOW_SLOW" => "1", "FLOW_RECOVERY_TIMEOUT" => "2"})
    lock = Jiggler::UniqueJob.lock_key(
      "UniqueJob", [1, 60], UniqueJob.job_options[:unique]
    )
    jid = UniqueJob.enqueue(1, 60)
    wait_for(message: "the job to start") do
      target_store.in_flight_count(slow.log[/ started: (\S+),/, 1]).positive?
    end
    # live before the kill: its reaper finds the death, it runs the job again
    start({"FLOW_RECOVERY_TIMEOUT" => "2"})
    slow.signal("KILL")
    killed = now
    assert_equal jid, target_store.lock_holder(lock),
      "the job keeps its lock while it waits to run again"
    wait_for(timeout: 15, message: "the lock to be released") do
      target_store.lock_holder(lock).nil?
    end
    took = now - killed
    puts format(
      "\nunique lock of a job killed -9 (%s, recovery_timeout 2 s): " \
        "released %.2f s after the kill",
      target_name, took
    )
    assert_operator took, :<, 2 + 0.5,
      "released within recovery_timeout, " \
        "then the job's run (it returns at once)"
    assert UniqueJob.enqueue(1, 60)
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# A unique class that raises on a conflict.
class UniqueRaising
  include Jiggler::Job

  job_options unique: {on_conflict: :raise}, queue: "unused"

  def perform(_) = nil
end

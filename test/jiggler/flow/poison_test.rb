# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# A job that goes to the dead set as poison (its server was killed -9 while it ran alone, at max_crashes) never runs
# again: the reaper that moves it frees its unique lock and its concurrency slot then, not when their ttl ends, so the
# job waiting for that slot runs at once.
StoreTarget.describe_each("poison jobs with flow options") do
  include FlowServers

  def env
    @env ||= target_env.merge(
      "FLOW_RECOVERY_TIMEOUT" => "2",
      "FLOW_MAX_CRASHES" => "1"
    )
  end

  def locked_runs
    if File.exist?(@record)
      File.readlines(@record).count { |line| line.start_with?("locked ") }
    else
      0
    end
  end

  it "frees the unique lock and the concurrency slot of a job " \
    "the reaper sends to the dead set" do
    doomed = start_flow(env)
    jid = LockedSlowJob.enqueue(60)
    wait_for(message: "the job to start") { locked_runs == 1 }
    assert LockedSlowJob.enqueue(0), "other arguments, another lock"
    wait_for(message: "the second job to wait for the slot") do
      target_store.waiting_counts["default"] == 1
    end
    doomed.signal("KILL")
    start_flow(env)
    wait_for(timeout: 15, message: "the poison job in the dead set") do
      target_store.set_entries(:dead)
        .any? { |payload, _| payload.include?(jid) }
    end
    # The reaper frees the lock just after it writes the dead set (two store calls): at once, not in the lock's ttl.
    lock = Jiggler::UniqueJob.lock_key(
      "LockedSlowJob", [60], LockedSlowJob.job_options[:unique]
    )
    wait_for(timeout: 2, message: "the poison job's lock to be freed") do
      target_store.lock_holder(lock).nil?
    end
    wait_for(
      timeout: 5,
      message: "the waiting job to run (its slot's ttl is 120 s)"
    ) { locked_runs == 2 }
  end
end

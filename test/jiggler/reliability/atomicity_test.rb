# frozen_string_literal: true

require_relative "helper"

# Every move of a job (fetch, acknowledgement, retry or dead write, requeue) is one atomic step, so a process killed
# at any moment leaves each job in exactly one place.
#
# What "exactly one place" means, observably: a job's place is its queue, the in-flight record of one process, the
# scheduled, retry or dead set, or "done" (acknowledged: gone from the store). The store holds each jid at most once
# across all of them; a jid the store no longer holds must have run to its end (the job records "done:<jid>" as its
# last act), else it was lost. A job may run again after a crash (at-least-once): a job that ran to its end but was
# not yet acknowledged when its process died is back in its queue and runs again; that is a second run, not a second
# place. A job that always fails never runs to its end, so it must always be found in exactly one place.
StoreTarget.describe_each("atomicity under kill -9") do
  include ReliabilityHelper

  # Places are read in one atomic step, then the record: a job that left the store before that step recorded
  # "done:" before it left, so the record read after shows it.
  # @returns [Array(Hash(String, Array(String)), Hash(String, Integer))] places per jid, and completed runs per jid.
  def snapshot
    places = @target.places(store)
    by_jid = places.each_with_object(
      Hash.new { |hash, key| hash[key] = [] }
    ) do |(place, payload), result|
      result[JSON.parse(payload)["jid"]] << place
    end
    [
      by_jid,
      recorded.grep(/\Adone:/)
        .map { |entry| entry.delete_prefix("done:") }
        .tally
    ]
  end

  # Asserts the invariant for every job; returns the snapshot.
  def assert_each_in_one_place(succeeding, failing, moment)
    places, runs = snapshot
    assert_empty places.select { |_, where| where.size > 1 },
      "#{moment}: jobs in more than one place"
    unknown = places.keys - succeeding - failing
    assert_empty unknown, "#{moment}: jobs nobody enqueued"
    lost = succeeding.select { |jid| places[jid].empty? && !runs.key?(jid) }
    assert_empty lost,
      "#{moment}: jobs neither in the store nor run to their end (lost)"
    assert_empty failing.select { |jid| places[jid].empty? },
      "#{moment}: failing jobs missing from the store (lost)"
    assert_empty failing.select { |jid| runs.key?(jid) },
      "#{moment}: failing jobs recorded as done"
    [places, runs]
  end

  it "leaves every job in exactly one place whenever a server is killed, " \
    "and loses none" do
    seed = ENV.fetch("JIGGLER_TEST_CHAOS_SEED", Random.new_seed % 10_000).to_i
    random = Random.new(seed)
    durations = ->(count) do
      Array.new(count) { random.rand(0.05..0.15).round(3) }
    end
    succeeding = Reliability::MixedJob.enqueue_bulk(
      durations.call(100).map { |seconds| [false, seconds] }
    )
    retried = Reliability::MixedJob.enqueue_bulk(
      durations.call(30).map { |seconds| [true, seconds] }
    )
    killed = Reliability::MixedJob.with_options(retries: 0).enqueue_bulk(
      durations.call(20).map { |seconds| [true, seconds] }
    )
    failing = retried + killed
    # Crashes are counted, and max_crashes would send a job in flight at 3 kills to the dead set. Not the point here.
    env = {"JIGGLER_TEST_MAX_CRASHES" => "1000"}

    kills = 6
    held = Array.new(kills) do |round|
      server = start_reliable("-c", "4", env: env, recovery_timeout: 1)
      sleep random.rand(0.05..0.5)
      server.signal(:KILL)
      server.wait(timeout: 5)
      assert_each_in_one_place(
        succeeding, failing, "seed #{seed}, after kill #{round + 1}"
      )
      store.in_flight_count(server_id(server))
    end

    # A last server recovers what the killed ones held, and runs the rest.
    finisher = start_reliable("-c", "4", env: env, recovery_timeout: 1)
    wait_for(timeout: 20, message: "every job run or failed (seed #{seed})") do
      places, = snapshot
      places.values.flatten.tally.slice("queue", "in_flight").empty?
    end
    finisher.signal(:TERM)
    assert_equal 0, finisher.wait(timeout: 10)

    places, runs = assert_each_in_one_place(
      succeeding, failing, "seed #{seed}, at the end"
    )
    assert_equal succeeding.sort, runs.keys.sort,
      "every succeeding job ran to its end"
    assert_empty succeeding.select { |jid| places[jid].any? },
      "and is no longer in the store"
    assert_equal retried.to_h { |jid| [jid, ["retry"]] },
      places.slice(*retried),
      "failing jobs with retries left are in the retry set"
    assert_equal killed.to_h { |jid| [jid, ["dead"]] }, places.slice(*killed),
      "failing jobs without retries are dead"
    again = runs.values.sum - runs.size
    puts format(
      "\natomicity on %s (seed %d): %d kills, holding %s jobs in flight; " \
        "%d succeeding jobs ran to their end again",
      target_name, seed, kills, held.inspect, again
    )
    assert_operator held.sum, :>, 0,
      "some kills should have caught jobs in flight"
    assert_operator again, :<=, kills * 4,
      "only jobs in flight at a kill (concurrency 4) may run again"
    assert_empty @servers.filter_map { |server| server_id(server) }
      .reject { |id| store.in_flight_count(id).zero? }
  end
end

# frozen_string_literal: true

require "test_helper"
require "yaml"
require "support/flow_servers"
require "support/web_session"
require_relative "../../fixtures/flow_jobs"

# Recurring tasks of limited and unique classes, run by a real `jiggler` server: each tick's job honours its class's
# concurrency limit and unique lock as any enqueue does, and so does the dashboard's Run now, which reads the task as
# the server stored it. On each store.
StoreTarget.describe_each("recurring tasks of limited and unique classes") do
  include FlowServers
  include WebSession

  # A schedule that does not fire while a test runs: those tasks run by hand only.
  def never = "0 0 1 1 *"

  before { @env = target_env }

  def web_store = target_store

  # Starts a server running `tasks` (task name => settings, as in recurring.yml).
  def start(tasks)
    path = File.join(@dir, "recurring.yml")
    File.write(path, YAML.dump(tasks))
    start_flow(@env.merge("FLOW_RECURRING_FILE" => path))
  end

  def lines = File.exist?(@record) ? File.readlines(@record).map(&:split) : []

  def times(event) = lines.filter_map { |name, _, at| at.to_f if name == event }

  # The most jobs running at once, from the records' start and end times.
  def most_at_once
    running = 0
    lines.map { |event, _, at| [at.to_f, (event == "start") ? 1 : -1] }
      .sort
      .map { |_, change| running += change }
      .max
  end

  def run_now(task)
    post_form "/recurring/#{task}/run", from: "/recurring"
    last_response.status
  end

  it "never runs more jobs of a limited class's task than its limit" do
    # A tick every second and jobs of 1.5 s: without the limit, two would run at once.
    start("limited" => {
      "class" => "OneAtOnceJob", "args" => [1.5], "schedule" => "every second"
    })
    wait_for(timeout: 30, message: "four runs to end") do
      times("end").size >= 4
    end
    assert_equal 1, most_at_once, lines.map { |line| line.join(" ") }.join("\n")
  end

  it "skips the ticks of a unique class's task while its job runs, " \
    "and enqueues the first tick after it finished" do
    server = start("unique" => {
      "class" => "UniqueTickJob", "args" => [2.5], "schedule" => "every second"
    })
    wait_for(timeout: 30, message: "three runs to end") do
      times("end").size >= 3
    end
    starts, ends = times("start"), times("end")
    assert_equal 1, most_at_once, lines.map { |line| line.join(" ") }.join("\n")
    # A job of 2.5 s started on a tick ends half a second before a tick, which runs it again: a start 1.5 s after the
    # end would mean that tick was skipped too.
    ends.first(2).zip(starts.drop(1)).each do |ended, started|
      assert_operator started - ended, :<, 1.2, "the run after a job ended"
    end
    assert_match(
      /cron: unique skipped .*: its unique job is still queued or running/,
      server.log
    )
    refute_match(/ERROR|WARN/, server.log)
    assert_operator target_store.queue_sizes.values.sum, :<=, 1,
      "no tick's job piles up"
  end

  it "honours the limit and the lock on the dashboard's Run now, " \
    "from the task as the server stored it" do
    start(
      "limited" => {
        "class" => "OneAtOnceJob", "args" => [1], "schedule" => never
      },
      "unique" => {
        "class" => "UniqueTickJob", "args" => [2], "schedule" => never
      }
    )
    3.times { assert_equal 303, run_now("limited") }
    wait_for(timeout: 20, message: "three limited runs to end") do
      times("end").size == 3
    end
    assert_equal 1, most_at_once, "the limited runs"
    assert_equal 303, run_now("unique")
    wait_for(message: "the unique job to start") { times("start").size == 4 }
    assert_equal 409, run_now("unique")
    assert_match(
      /not enqueued: this task's job is unique and one is still queued or running \(lock UniqueTickJob:/,
      body
    )
    assert_equal({}, target_store.queue_sizes)
    wait_for(message: "the unique job to end, and its lock to be released") do
      times("end").size == 4 && run_now("unique") == 303
    end
    wait_for(message: "the second unique run to start") do
      times("start").size == 5
    end
    assert_equal 1, most_at_once
  end
end

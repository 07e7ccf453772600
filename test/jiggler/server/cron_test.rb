# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "async"
require "jiggler/recurring_task"
require "jiggler/server/cron"

# Counts the ticks tasks work out (each a fugit computation of about a millisecond), while a test asks.
module CronTestCount
  CALLS = []

  def tick_after(now) = super.tap { CALLS << :after }

  def tick_at_or_before(now) = super.tap { CALLS << :before }
end
Jiggler::RecurringTask.prepend(CronTestCount)

# The cron loop with many tasks, on each store: it works ticks out once per distinct schedule, and only when one is
# due, rather than every task's at every look.
describe Jiggler::Server::Cron do
  def tasks(count, schedule, prefix)
    Array.new(count) do |index|
      name = "#{prefix}_#{index}"
      [
        name,
        Jiggler::RecurringTask.build(name, {
          "class" => "CronTestTickJob",
          "args" => [index],
          "schedule" => schedule
        })
      ]
    end
  end

  {"redis" => {}, "sqlite" => {redis_url: nil}}.each do |store_name, settings|
    it "enqueues thousands of tasks' ticks with a few ticks worked out " \
      "per look, not every task's, on #{store_name}" do
      dir = Dir.mktmpdir("jiggler-cron")
      Jiggler.configure do |config|
        settings.each { |key, value| config[key] = value }
        if store_name == "sqlite"
          config[:sqlite_path] = File.join(dir, "jobs.sqlite3")
        end
      end
      all = (
        tasks(1_500, "0 3 * * *", "night") +
        tasks(1_500, "0 4 1 * *", "month") +
        tasks(3, "every second", "s")
      ).to_h
      cron = Jiggler::Server::Cron.new(
        store: Jiggler::Store.dedicated(Jiggler.config),
        tasks: all,
        missed: :skip,
        interval: 0.05,
        logger: Logger.new(File::NULL),
        middleware: Jiggler::Middleware::Chain.new
      )
      CronTestCount::CALLS.clear
      Sync do |task|
        cron.start(parent: task)
        wait_for(
          timeout: 20,
          message: "three ticks of the every-second tasks"
        ) { store.queue_sizes["default"].to_i >= 9 }
        cron.stop
      end
      assert_equal 3_003, store.recurring_tasks.size,
        "every task recorded for the dashboard"
      assert_operator CronTestCount::CALLS.size, :<=, 20,
        "ticks worked out: #{CronTestCount::CALLS.tally}"
      ticks = store.queue_entries("default").map do |entry|
        Jiggler::Payload.load(entry)["recurring"]
      end
      assert_equal ticks.uniq.size, ticks.size, "each task's tick enqueued once"
    ensure
      store.close
      FileUtils.rm_rf(dir)
    end
  end

  # A six-field cron line (seconds first) whose only tick this year is at `time` (a Time).
  def at(time) = time.strftime("%-S %-M %-H %-d %-m *")

  # The ticks (epoch seconds) of the recurring jobs in the default queue, by task.
  def enqueued_ticks
    store.queue_entries("default")
      .map { |entry| Jiggler::Payload.load(entry)["recurring"] }
      .to_h { |recurring| [recurring["task"], recurring["tick"]] }
  end

  # Two looks of a new Cron loop (the second finds nothing new), as a server that just started makes them.
  def look_twice(tasks, missed)
    cron = Jiggler::Server::Cron.new(
      store: Jiggler::Store.dedicated(Jiggler.config),
      tasks: tasks,
      missed: missed,
      interval: 1,
      logger: Logger.new(File::NULL),
      middleware: Jiggler::Middleware::Chain.new
    )
    Sync do
      2.times { cron.send(:tick) }
    ensure
      cron.stop
    end
  end

  def task(name, schedule)
    [
      name,
      Jiggler::RecurringTask.build(name, {
        "class" => "CronTestTickJob",
        "schedule" => schedule
      })
    ]
  end

  # README, Recurring jobs: "A tick more than 60 s late when a server first sees it is skipped". The late tick is
  # 60.1-60.5 s old when the loop looks (it waits for a time 0.1-0.4 s past a whole second), so the test shows the
  # limit is 60 s, and not any second more; a tick 59 s late still runs.
  it "skips a tick more than 60 s late when it first sees it, " \
    "and runs one less late" do
    wait_for(message: "a time 0.1-0.4 s past a second") do
      (0.1..0.4).cover?(Time.now.to_f % 1)
    end
    second = Time.at(Time.now.to_i)
    look_twice(
      [
        task("late", at(second - 60)),
        task("in_time", at(second - 59))
      ].to_h,
      :skip
    )
    assert_equal ["in_time"], enqueued_ticks.keys,
      "a tick 60.1-60.5 s late ran, or one 59 s late did not"
    assert_equal (second - 59).to_i, enqueued_ticks["in_time"]
  end

  # README: "with config[:recurring_missed] = :run_once, the latest missed tick runs once when a server comes back".
  # The task's last tick was 5 minutes ago, the tick before a minute earlier: the later one runs, once.
  it "runs the latest missed tick once with recurring_missed: :run_once, " \
    "and none without" do
    now = Time.at(Time.now.to_i)
    schedule = "#{now.strftime("%-S")} " \
      "#{(now - 360).strftime("%-M")},#{(now - 300).strftime("%-M")} * * * *"
    look_twice([task("skipped", schedule)].to_h, :skip)
    assert_empty enqueued_ticks,
      "a tick 5 minutes late ran without recurring_missed: :run_once"
    look_twice([task("caught_up", schedule)].to_h, :run_once)
    assert_equal({"caught_up" => (now - 300).to_i}, enqueued_ticks)
    assert_equal 1, store.queue_sizes["default"],
      "the missed tick ran more than once"
  end
end

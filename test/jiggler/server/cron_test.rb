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
      [name, Jiggler::RecurringTask.build(name, {"class" => "CronTestTickJob", "args" => [index], "schedule" => schedule})]
    end
  end

  {"redis" => {}, "sqlite" => {redis_url: nil}}.each do |store_name, settings|
    it "enqueues thousands of tasks' ticks with a few ticks worked out per look, not every task's, on #{store_name}" do
      dir = Dir.mktmpdir("jiggler-cron")
      Jiggler.configure do |config|
        settings.each { |key, value| config[key] = value }
        config[:sqlite_path] = File.join(dir, "jobs.sqlite3") if store_name == "sqlite"
      end
      all = (tasks(1_500, "0 3 * * *", "night") + tasks(1_500, "0 4 1 * *", "month") + tasks(3, "every second", "s")).to_h
      cron = Jiggler::Server::Cron.new(store: Jiggler::Store.dedicated(Jiggler.config), tasks: all, missed: :skip,
        interval: 0.05, logger: Logger.new(File::NULL), middleware: Jiggler::Middleware::Chain.new)
      CronTestCount::CALLS.clear
      Sync do |task|
        cron.start(parent: task)
        wait_for(timeout: 20, message: "three ticks of the every-second tasks") { store.queue_sizes["default"].to_i >= 9 }
        cron.stop
      end
      assert_equal 3_003, store.recurring_tasks.size, "every task recorded for the dashboard"
      assert_operator CronTestCount::CALLS.size, :<=, 20, "ticks worked out: #{CronTestCount::CALLS.tally}"
      ticks = store.queue_entries("default").map { |entry| Jiggler::Payload.load(entry)["recurring"] }
      assert_equal ticks.uniq.size, ticks.size, "each task's tick enqueued once"
    ensure
      store.close
      FileUtils.rm_rf(dir)
    end
  end
end

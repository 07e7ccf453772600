# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "json"
require "jiggler/client"
require "jiggler/recurring_task"
require "jiggler/config/recurring_file"

describe Jiggler::RecurringTask do
  def task(**settings)
    Jiggler::RecurringTask.build(
      "report",
      {"class" => "TickJob", "schedule" => "every minute"}
        .merge(settings.transform_keys(&:to_s))
    )
  end

  def error(**settings)
    assert_raises(Jiggler::Config::InvalidError) { task(**settings) }.message
  end

  # The job a task enqueues for a tick, as the store holds it.
  def enqueued(task, settings, tick)
    assert task.enqueue(
      store,
      settings,
      tick,
      middleware: Jiggler::Middleware::Chain.new
    )
    Jiggler::Payload.load(store.queue_entries(task.queue_for(settings)).first)
  end

  it "reads cron lines and phrases, and finds the ticks around a time" do
    assert_equal 120, task(schedule: "every minute").tick_at_or_before(179.5)
    assert_equal 180, task(schedule: "every minute").tick_at_or_before(180.0)
    assert_equal 900, task(schedule: "*/15 * * * *").tick_after(1.0)
    assert_equal 15, task(schedule: "*/5 * * * * *").tick_after(10.0)
  end

  it "honours a time zone in the schedule" do
    january = Time.utc(2026, 1, 10, 12).to_f
    assert_equal Time.utc(2026, 1, 11, 8).to_i,
      task(schedule: "0 9 * * * Europe/Paris").tick_after(january)
    assert_equal Time.utc(2026, 1, 10, 14).to_i,
      task(schedule: "every day at 9am America/New_York").tick_after(january)
  end

  it "takes one argument or an argument list, as Solid Queue does" do
    assert_equal [42], task(args: 42).args
    assert_equal [1, {"a" => 2}], task(args: [1, {"a" => 2}]).args
    assert_equal [], task.args
  end

  it "writes a payload for the class's queue unless the task names one, " \
    "marked with its task and tick" do
    payload = enqueued(task(args: [7]), {"queue" => "low", "retries" => 2}, 60)
    assert_equal({"task" => "report", "tick" => 60}, payload["recurring"])
    assert_equal ["TickJob", [7], "low", 2],
      payload.values_at("name", "args", "queue", "retries")
    assert_equal "mail", enqueued(
      task(queue: "mail"),
      {"queue" => "low", "retries" => 2},
      nil
    )["queue"]
  end

  it "writes an Active Job class's job for its wrapper, with the task's " \
    "arguments as Active Job's, a fresh job_id each" do
    wrapper = "ActiveJob::QueueAdapters::JigglerAdapter::JobWrapper"
    record = {"_aj_globalid" => "gid://app/Account/1"}
    aj = task(args: [record])
    settings = JSON.parse(JSON.generate(
      aj.job_settings({queue: "flow", retries: 0, wrapper: wrapper})
    ))
    [60, 120].each do |tick|
      assert aj.enqueue(
        store,
        settings,
        tick,
        middleware: Jiggler::Middleware::Chain.new
      )
    end
    first, second = store.queue_entries("flow")
      .map { |entry| Jiggler::Payload.load(entry) }
    assert_equal [wrapper, "TickJob", [record], "flow", 0],
      first.values_at("wrapper", "name", "args", "queue", "retries")
    assert_equal ["TickJob", "flow", 0, {}],
      first["active_job"].values_at(
        "job_class",
        "queue_name",
        "executions",
        "exception_executions"
      )
    refute_equal first["active_job"]["job_id"], second["active_job"]["job_id"]
  end

  it "works out once the limits and the lock its class's options give " \
    "its fixed arguments, as a client would" do
    options = Jiggler::Job::Options.merge(Jiggler::Job::Options::DEFAULTS, {
      unique: {until: :started, key: ->(account, _) { account }},
      concurrency: {limit: 2, key: ->(account, _) { account }},
      rate: {limit: 5}
    })
    settings = task(args: ["acme", 1]).job_settings(options)
    client = Jiggler::Client.new(nil)
      .build("TickJob", [["acme", 1]], options, nil)
      .first
    assert_equal client["limits"], settings["limits"]
    assert_equal(
      {"lock" => "TickJob:acme", "until" => "started", "ttl" => 3600},
      settings["unique"]
    )
    read, stored = Jiggler::RecurringTask.from_h(
      "report",
      JSON.parse(JSON.generate(task(args: ["acme", 1]).to_h(settings)))
    )
    payload = enqueued(read, stored, 60)
    assert_equal [
      client["limits"],
      {"lock" => "TickJob:acme", "until" => "started"},
      "default",
      25
    ], payload.values_at("limits", "unique", "queue", "retries")
    assert_equal ["default", 25], Jiggler::RecurringTask.from_h(
      "report",
      {"class" => "TickJob", "schedule" => "every minute"}
    ).last.values_at("queue", "retries")
    failing = Jiggler::Job::Options.merge(Jiggler::Job::Options::DEFAULTS, {
      unique: {key: ->(account) { account.fetch(:id) }}
    })
    assert_match(
      /"report" has arguments its class's key cannot read: NoMethodError/,
      assert_raises(Jiggler::Config::InvalidError) do
        task(args: [1]).job_settings(failing)
      end.message
    )
  end

  it "refuses bad settings with the task's name and the reason" do
    assert_match(
      /\Arecurring task "report" has schedule "sometimes", which is neither a cron line/,
      error(schedule: "sometimes")
    )
    assert_match(
      /"report" has schedule "5 minutes", which is a duration, not a schedule: write "every 5 minutes"/,
      error(schedule: "5 minutes")
    )
    assert_match(/"report" needs schedule/, error(schedule: nil))
    assert_match(/"report" needs class/, error(class: nil))
    assert_match(
      /"report" has command, which jiggler does not take/,
      error(command: "Report.run")
    )
    assert_match(/"report" has an unknown key "every"/, error(every: 5))
    assert_match(
      /"report" has arguments that cannot be stored/,
      error(args: [Object.new])
    )
  end

  it "refuses a class that is not a constant's name, " \
    "suggesting the constant" do
    assert_match(
      /\Arecurring task "report" has class "count_job", which is not a class name: .*"CountJob"\z/,
      error(class: "count_job")
    )
    assert_match(
      /"report" has class "Reports::nightly", which is not a class name/,
      error(class: "Reports::nightly")
    )
    assert_equal "Reports::NightlyJob", task(class: "Reports::NightlyJob").job
  end

  it "refuses a queue that is not a queue name, " \
    "by the rule every queue name follows" do
    ["", " ", "a b", "a|b", "{a}", "x" * 129].each do |queue|
      assert_match(
        /\Arecurring task "report" has queue #{Regexp.escape(queue.inspect)}, which is not a queue name: 1 to 128/,
        error(queue: queue)
      )
    end
    assert_equal "reports", task(queue: "reports").queue
    assert_nil task(queue: nil).queue, "no queue: the class's"
  end

  it "refuses a name the dashboard could not show or address, " \
    "and takes any other" do
    [
      "",
      "   ",
      "tab\tname",
      "x" * 201,
      "\xFF".b.force_encoding(Encoding::UTF_8)
    ].each do |name|
      message = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler::RecurringTask.build(
          name,
          {"class" => "TickJob", "schedule" => "every minute"}
        )
      end.message
      assert_match(
        /has a name the dashboard cannot show or address: write 1 to 200 printable characters/,
        message
      )
    end
    assert_equal "a/b ..?", Jiggler::RecurringTask.build(
      "a/b ..?",
      {"class" => "TickJob", "schedule" => "every minute"}
    ).name
  end

  it "says what is wrong with a schedule and which forms it takes, " \
    "cron lines and fugit's phrases" do
    accepted = /write a cron line \(five fields, minute hour day-of-month \
month day-of-week.*or a phrase fugit reads \("every 5 minutes"/
    assert_match(
      /"every 5 minutez", which is neither a cron line nor a phrase fugit reads; #{accepted}/,
      error(schedule: "every 5 minutez")
    )
    assert_match(
      /"\* \* \* \*", which is not a cron line: it has 4 fields, where a cron line has five/,
      error(schedule: "* * * *")
    )
    assert_match(
      /"61 \* \* \* \*", which is not a valid cron line: a field is out of range or malformed \(minute 0-59/,
      error(schedule: "61 * * * *")
    )
    assert_match(
      /"0 3 \* \* \* Mars\/Olympus", which has an unknown time zone "Mars\/Olympus": use a name of the tz database/,
      error(schedule: "0 3 * * * Mars/Olympus")
    )
    assert_match(
      /"2026-12-01 10:00", which is one point in time, not a repeating schedule; #{accepted}/,
      error(schedule: "2026-12-01 10:00")
    )
    refute_match(
      /write "every/,
      error(schedule: "0 3 * * * Mars/Olympus"),
      "no advice to prefix a cron line with every"
    )
    assert_match(
      /"12", which is not a cron line: it has 1 field,/,
      error(schedule: "12")
    )
    assert_equal "0 12 * * 1",
      task(schedule: "every monday at noon").cron.to_cron_s
  end

  it "is checked when set in the config, and the whole config stays usable" do
    config = Jiggler::Config.new
    config[:recurring] = {report: {class: "TickJob", schedule: "every hour"}}
    assert_equal ["report"], config[:recurring].keys
    assert_raises(Jiggler::Config::InvalidError) do
      config[:recurring] = {report: {class: "TickJob", schedule: "never"}}
    end
    assert_raises(Jiggler::Config::InvalidError) do
      config[:recurring_missed] = :always
    end
  end
end

describe Jiggler::Config::RecurringFile do
  it "reads top-level tasks and the environment's section, " \
    "which wins by name" do
    path = File.join(Dir.mktmpdir("jiggler-recurring"), "recurring.yml")
    File.write(path, <<~YAML)
      a:
        class: TickJob
        schedule: every hour
      production:
        a:
          class: TickJob
          schedule: every minute
        b:
          class: TickJob
          schedule: "0 3 * * *"
      development:
        c:
          class: TickJob
          schedule: every day
    YAML
    tasks = Jiggler::Config::RecurringFile.load(path, "production")
    assert_equal(
      {"a" => "every minute", "b" => "0 3 * * *"},
      tasks.transform_values { |task| task["schedule"] }
    )
  end

  def file(text)
    File.join(Dir.mktmpdir("jiggler-recurring"), "recurring.yml")
      .tap { |path| File.write(path, text) }
  end

  it "names the file and the task in one line when a task is wrong" do
    path = file("count:\n  class: count_job\n  schedule: every minute\n")
    message = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler::Config::RecurringFile.tasks(path, "production")
    end.message
    assert_equal "#{path}: recurring task \"count\" has class \"count_job\", " \
      "which is not a class name: " \
      "write the job class's constant, such as \"CountJob\"", message
    assert_equal ["count"], Jiggler::Config::RecurringFile.tasks(
      file("count:\n  class: CountJob\n  schedule: every minute\n"),
      "x"
    ).keys
  end

  it "refuses YAML aliases at once, naming the file, " \
    "so an alias bomb in args cannot hang the boot" do
    levels = ("b".."i").each_cons(2).map { |from, to|
      "&#{to} [#{(["*#{from}"] * 9).join(", ")}]"
    }.join(", ")
    path = file("bomb:\n  class: TickJob\n  schedule: every minute\n" \
      "  args: [&b [x, x, x, x, x, x, x, x, x], #{levels}]\n")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    message = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler::Config::RecurringFile.load(path, "production")
    end.message
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
      :<, 1
    assert_equal "config file #{path} uses a YAML alias (*name), " \
      "which this file may not: an alias repeated inside " \
      "aliases can grow without bound; write the values out instead", message
  end
end

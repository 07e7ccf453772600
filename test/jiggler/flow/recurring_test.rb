# frozen_string_literal: true

require "test_helper"
require "support/flow_servers"
require_relative "../../fixtures/flow_jobs"

# Recurring tasks run by real `jiggler` servers with no leader: three servers and a task every second enqueue each
# tick exactly once, also while one of them is killed; a bad schedule stops the boot. On each store.
StoreTarget.describe_each("recurring tasks") do
  include FlowServers

  # How long the three servers run: each second of it must hold one tick, so a short run proves as much as a long one.
  def seconds = 8

  before do
    @recurring_file = File.join(@dir, "recurring.yml")
    File.write(@recurring_file, <<~YAML)
      every_second:
        class: TickJob
        args: [1, {"b": 2}]
        schedule: every second
    YAML
  end

  def start
    start_flow(
      target_env.merge("FLOW_RECURRING_FILE" => @recurring_file),
      wait: false
    )
  end

  def wait_started(servers)
    servers.each do |server|
      wait_for(timeout: 20, message: "server #{server.pid} to start") do
        server.log.include?("started:") || !server.running?
      end
      assert server.running?, "the server did not start:\n#{server.log}"
    end
  end

  # Three servers run for `seconds`, one is killed -9 halfway: the ticks enqueued are consecutive seconds, each once,
  # covering every second while servers ran.
  it "enqueues each tick exactly once with three servers" do
    servers = Array.new(3) { start }
    wait_started(servers)
    first = Time.now.to_f.ceil
    sleep(seconds / 2.0)
    servers.first.signal("KILL")
    sleep(seconds / 2.0)
    last = Time.now.to_f.floor
    servers.each(&:kill)
    ticks = target_store.queue_entries("ticks", limit: 1_000)
      .map { |payload| Jiggler::Payload.load(payload)["recurring"]["tick"] }
      .sort
    assert_equal ticks.uniq, ticks, "a tick was enqueued twice"
    assert_equal (ticks.first..ticks.last).to_a, ticks, "a tick was skipped"
    assert_operator ticks.first, :<=, first
    assert_operator ticks.last, :>=, last
    job = Jiggler::Payload.load(
      target_store.queue_entries("ticks", limit: 1).first
    )
    assert_equal [1, {"b" => 2}], job["args"]
    if target_name == "sqlite"
      assert_includes(
        target_store.history(job["jid"]).map { |_, event| event["type"] },
        "recurring"
      )
    end
  end

  it "stops the boot with the file, the task's name " \
    "and the reason for a bad schedule" do
    File.write(
      @recurring_file,
      "nightly:\n  class: TickJob\n  schedule: every blue moon\n"
    )
    server = start
    assert_equal 1, server.wait(timeout: 20)
    assert_equal 1, server.log.lines.size, server.log
    assert_match(
      /\Ajiggler: #{
        Regexp.escape(@recurring_file)
      }: recurring task "nightly" has schedule "every blue moon", which is neither a cron line/,
      server.log
    )
  end
end

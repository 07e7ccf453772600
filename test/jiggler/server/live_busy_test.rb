# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "rack/mock"
require "jiggler/web"

# The running jobs a real server reports between its heartbeats: a job shows in the summary and on the Busy page about
# a second after it starts, although the heartbeat comes every 5 s, and reports come at most about once a second.
describe "live running jobs" do
  before { @tmp = Dir.mktmpdir("jiggler-live-busy") }
  after do
    FileUtils.rm_rf(@tmp)
  end

  # A server whose heartbeat comes every 5 s.
  def start_slow_beating_server(*flags)
    config = File.join(@tmp, "jiggler.yml")
    File.write(config, "stats_interval: 5\nrecovery_timeout: 30\n")
    start_server("-C", config, *flags)
  end

  def info = Jiggler.summary["processes"].values.first

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  it "shows a job within about a second of its start, in the summary " \
    "and on the Busy page" do
    start_slow_beating_server
    first = wait_for(message: "the first heartbeat") do
      info&.fetch("heartbeat")
    end
    wait_for(message: "the second heartbeat", timeout: 8) do
      info["heartbeat"] != first
    end
    jid = SlowJob.enqueue("live", 4)
    wait_for(message: "the job's start") { recorded.include?("start:live") }
    started = now
    running = wait_for(
      message: "the running job in the summary",
      timeout: 5
    ) { info["current_jobs"].values.first }
    assert_operator now - started, :<, 2.0,
      "the job showed only at the next heartbeat"
    assert_equal "default", running["queue"]
    status, _, body = Jiggler::Web.new.call(Rack::MockRequest.env_for("/busy"))
    assert_equal 200, status
    assert_includes body.join, jid
  end

  it "reports changing jobs at most about once a second" do
    start_slow_beating_server("-c", "2")
    # about 3 s of changing jobs on 2 workers
    SlowJob.enqueue_bulk((1..120).map { |n| [n, 0.05] })
    beats = []
    deadline = now + 3
    while now < deadline
      beats << info["heartbeat"]
      sleep 0.02
    end
    reports = beats.uniq.size
    assert_operator reports, :>=, 2,
      "running jobs were not reported between heartbeats"
    assert_operator reports, :<=, 5, "reported #{reports} times in 3 s"
  end
end

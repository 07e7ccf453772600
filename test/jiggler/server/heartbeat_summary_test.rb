# frozen_string_literal: true

require "test_helper"
require "json"

# A real server's heartbeat reports each running job as a bounded summary (queue, class, jid, arguments cut to
# Heartbeat::ARGS_LIMIT characters of JSON, start), never its whole payload: jobs with megabytes of arguments do not
# make every heartbeat, and every dashboard read, megabytes long.
describe "the heartbeat of a server running large jobs" do
  it "carries a bounded summary of each running job" do
    start_server("-c", "3")
    big = "x" * 1_000_000
    jids = Array.new(3) { SlowJob.enqueue(big, 30) }
    infos = wait_for(message: "three running jobs in the heartbeat") do
      store.processes.values.then do |all|
        if all.size == 1 && JSON.parse(all.first)["current_jobs"].size == 3
          all
        end
      end
    end
    assert_operator infos.first.bytesize, :<, 3 * 2_200 + 1_000,
      "the heartbeat holds no whole payload"
    jobs = JSON.parse(infos.first)["current_jobs"].values
    assert_equal jids.sort, jobs.map { |job| job["jid"] }.sort
    jobs.each do |job|
      assert_equal %w[args class jid queue run_at], job.keys.sort
      assert_equal ["SlowJob", "default"], job.values_at("class", "queue")
      assert_equal %(["#{"x" * 2_046}…), job["args"]
    end
  end
end

# frozen_string_literal: true

require "test_helper"

describe "jiggler server" do
  it "runs enqueued jobs and counts them" do
    RecordJob.enqueue_bulk((1..50).map { |n| [n] })
    start_server
    wait_for(message: "50 jobs") { recorded.size == 50 }
    assert_equal (1..50).map(&:to_s).sort, recorded.sort
    wait_for(message: "processed count") { Jiggler.summary["processed_count"] == 50 }
  end
end

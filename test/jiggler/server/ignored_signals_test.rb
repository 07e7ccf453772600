# frozen_string_literal: true

require_relative "../reliability/helper"

# HUP, USR1 and USR2 sent to a single server (no -p): each is logged and ignored, and the server goes on working. By
# default each would end the process (HUP also comes when the terminal that started it closes).
describe "jiggler server: HUP, USR1 and USR2" do
  include ReliabilityHelper

  it "logs and ignores each, runs jobs after them, and stops on TERM " \
    "as usual" do
    server = start_reliable("-t", "1")
    %w[HUP USR1 USR2].each do |signal|
      server.signal(signal)
      wait_for(message: "SIG#{signal} logged\n#{server.log}") do
        server.log.include?("SIG#{signal} ignored")
      end
    end
    Reliability::RecordJob.enqueue("after")
    wait_for(message: "a job to run after the signals") do
      recorded_count("run:after") == 1
    end
    server.signal("TERM")
    assert_equal 0, server.wait(timeout: 10), server.log
    refute_match(/Async::Stop|SignalException/, server.log)
  end
end

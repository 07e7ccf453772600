# frozen_string_literal: true

require "test_helper"
require "support/loop_test"
require "jiggler/server/outage"

# How a background loop reports a store it cannot reach: once when the outage starts, once when it ends (with how long
# it lasted), and back-off delays that double up to a second in between.
describe Jiggler::Server::Outage do
  include LoopTest

  let(:outage) { Jiggler::Server::Outage.new("fetcher", logger) }

  it "logs the first failure of an outage only, and doubles the back-off " \
    "up to MAX_DELAY" do
    delays = Array.new(7) { outage.failed(IOError.new("connection refused")) }
    assert_equal [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0], delays
    assert_equal [
      "ERROR: fetcher: IOError: connection refused; retrying until it works\n"
    ], @log.string.lines
    assert outage.ongoing?
  end

  it "logs the end of an outage with how long it lasted, and starts " \
    "the next one from the first delay" do
    started = now
    outage.failed(IOError.new("down"))
    outage.failed(IOError.new("still down"))
    wait_for(message: "some time to pass") { now - started >= 0.1 }
    outage.recovered
    lasted = Float(
      logged(/INFO/)
        .first[/\AINFO: fetcher: working again after (\d+\.\d) s\n\z/, 1]
    )
    assert_in_delta now - started, lasted, 0.1
    refute outage.ongoing?
    assert_equal 0.05, outage.failed(IOError.new("down again"))
    assert_equal 2, logged(/ERROR/).size, "a new outage is logged again"
  end

  it "logs nothing when a loop that never failed succeeds" do
    3.times { outage.recovered }
    assert_empty @log.string
    refute outage.ongoing?
  end
end

# frozen_string_literal: true

require "test_helper"
require "async"
require "jiggler/server/processor"
require "jiggler/store/fetched"

module HandlersTest
  class Broken
    include Jiggler::Job

    def perform(message) = raise(ArgumentError, message)
  end
end

describe Jiggler::Handlers do
  let(:log) { StringIO.new }
  let(:reports) { [] }

  def run_job(retries:, args: ["boom"])
    processor = Jiggler::Server::Processor.new(
      logger: Logger.new(log), results: nil, config: Jiggler.config.freeze
    )
    payload = {
      "jid" => "j1",
      "name" => "HandlersTest::Broken",
      "args" => args,
      "queue" => "q",
      "retries" => retries
    }
    processor.call(
      Jiggler::Store::Fetched.new(1, "q", Jiggler::Payload.dump(payload))
    )
  end

  before do
    Jiggler.configure do |config|
      config[:error_handlers] << ->(error, context) {
        reports << [
          :error, error.message, context[:job]["jid"], context[:queue]
        ]
      }
      config[:death_handlers] << ->(job, error) {
        reports << [:death, job["jid"], job["error_class"], error.class]
      }
    end
  end

  it "tells the error handlers of every failure, with the job's context" do
    assert_equal :retry, run_job(retries: 3).set
    assert_equal [[:error, "boom", "j1", "q"]], reports
  end

  it "tells the death handlers of a job that reaches the dead set" do
    assert_equal :dead, run_job(retries: 0).set
    assert_equal [:death, "j1", "ArgumentError", ArgumentError], reports.last
  end

  it "logs a handler that raises and still records the failure " \
    "and calls the others" do
    Jiggler.config[:error_handlers].unshift(->(_, _) { raise "tracker down" })
    assert_equal :retry, run_job(retries: 3).set
    assert_equal 1, reports.size
    assert_includes log.string, "error_handlers entry"
    assert_includes log.string, "RuntimeError: tracker down"
  end

  it "tells the death handlers of an unreadable payload" do
    processor = Jiggler::Server::Processor.new(
      logger: Logger.new(log), results: nil, config: Jiggler.config.freeze
    )
    assert_equal :dead,
      processor.call(Jiggler::Store::Fetched.new(1, "q", "not json")).set
    assert_equal(
      [
        :death,
        String,
        "Jiggler::Payload::MalformedError",
        Jiggler::Payload::MalformedError
      ],
      reports.last.map.with_index { |v, i| (i == 1) ? v.class : v }
    )
  end

  it "accepts only callables" do
    error = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler.config[:error_handlers] = ["not callable"]
    end
    assert_match(
      /config\[:error_handlers\] must be an Array of objects that respond to #call/,
      error.message
    )
  end
end

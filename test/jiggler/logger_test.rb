# frozen_string_literal: true

require "test_helper"

describe Jiggler::Logger do
  let(:io) { StringIO.new }

  it "writes one plain line per message with time, pid and level" do
    Jiggler::Logger.build(io).warn("careful")
    assert_match(
      /\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z pid=#{Process.pid} WARN: careful\n\z/,
      io.string
    )
  end

  it "writes one JSON object per line in the JSON format, " \
    "with a job's fields as keys" do
    logger = Jiggler::Logger.build(io, format: :json)
    logger.error(
      "retry: Billing::Invoice jid=abc123 queue=billing attempt=2 " \
      "RuntimeError: total=0 is wrong"
    )
    logger.info("started: server")
    job, other = io.string.lines.map { |line| JSON.parse(line) }
    assert_equal(
      [
        "ERROR",
        "retry",
        "Billing::Invoice",
        "abc123",
        "billing",
        "2",
        Process.pid
      ],
      job.values_at("level", "event", "class", "jid", "queue", "attempt", "pid")
    )
    refute job.key?("total"), "the error message's text is not a field"
    assert_equal ["started: server", nil], other.values_at("message", "class")
  end

  it "switches a logger it built to another format, " \
    "and leaves an app's own logger alone" do
    logger = Jiggler::Logger.build(io)
    Jiggler::Logger.reformat(logger, :json).info("hello")
    assert_equal "hello", JSON.parse(io.string)["message"]
    own = ::Logger.new(StringIO.new)
    Jiggler::Logger.reformat(own, :json)
    assert_nil own.formatter
  end

  describe "the log_format setting" do
    after do
      ENV.delete("JIGGLER_LOG_FORMAT")
      Jiggler.reset!
      Jiggler.logger = nil
    end

    it "defaults to JIGGLER_LOG_FORMAT, which Jiggler.logger follows" do
      ENV["JIGGLER_LOG_FORMAT"] = "json"
      Jiggler.reset!
      assert_equal :json, Jiggler.config[:log_format]
      Jiggler.logger = nil
      assert_equal Jiggler::Logger.method(:format_json),
        Jiggler.logger.formatter
    end

    it "refuses an unknown format, from code or from the environment, " \
      "naming the setting" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.configure { |config| config[:log_format] = "jsno" }
      end
      assert_match(
        /config\[:log_format\] must be one of :plain, :json/, error.message
      )
      ENV["JIGGLER_LOG_FORMAT"] = "jsno"
      Jiggler.reset!
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.config[:log_format]
      end
      assert_match(/JIGGLER_LOG_FORMAT/, error.message)
    end
  end
end

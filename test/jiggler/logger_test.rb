# frozen_string_literal: true

require "test_helper"

describe Jiggler::Logger do
  let(:io) { StringIO.new }

  it "writes one plain line per message with time, pid and level" do
    Jiggler::Logger.build(io).warn("careful")
    assert_match(/\A\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z pid=#{Process.pid} WARN: careful\n\z/, io.string)
  end

  it "writes one JSON object per line in the JSON format, with a job's fields as keys" do
    logger = Jiggler::Logger.build(io, format: :json)
    logger.error("retry: Billing::Invoice jid=abc123 queue=billing attempt=2 RuntimeError: total=0 is wrong")
    logger.info("started: server")
    job, other = io.string.lines.map { |line| JSON.parse(line) }
    assert_equal ["ERROR", "retry", "Billing::Invoice", "abc123", "billing", "2", Process.pid],
      job.values_at("level", "event", "class", "jid", "queue", "attempt", "pid")
    refute job.key?("total"), "the error message's text is not a field"
    assert_equal ["started: server", nil], other.values_at("message", "class")
  end

  it "takes the format from JIGGLER_LOG_FORMAT" do
    ENV["JIGGLER_LOG_FORMAT"] = "json"
    Jiggler::Logger.build(io).info("hello")
    assert_equal "hello", JSON.parse(io.string)["message"]
  ensure
    ENV.delete("JIGGLER_LOG_FORMAT")
  end
end

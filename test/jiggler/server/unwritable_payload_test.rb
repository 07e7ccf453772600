# frozen_string_literal: true

require "test_helper"
require "stringio"
require "async"
require "jiggler/server/processor"
require "jiggler/server/fetched"

# A payload that parses but cannot be written back, such as a number like 1e400 (it reads as Infinity, which JSON
# cannot write): when its job fails, it goes to the dead set as it was stored, and the log says why.
class UnwritablePayloadJob
  include Jiggler::Job

  def perform(number) = raise(ArgumentError, "no #{number}")
end

describe "a failing job whose payload cannot be written back" do
  it "goes to the dead set with its raw text, and is logged" do
    log = StringIO.new
    payload = %({"jid":"#{"a" * 24}","name":"UnwritablePayloadJob","args":[1e400],"queue":"default","retries":3})
    record = Jiggler::Server::Processor.new(logger: Logger.new(log)).call(Jiggler::Server::Fetched.new("7|default", payload))
    field, set, _, json = record
    assert_equal ["7|default", "dead"], [field, set]
    assert_equal payload, JSON.parse(json)["raw"]
    assert_match(/dead: UnwritablePayloadJob jid=a{24} queue=default: ArgumentError: no Infinity; its failure cannot be written on the job \(.*like 1e400, reads as Infinity\), so it goes to the dead set as it was stored/, log.string)
  end
end

# frozen_string_literal: true

require "test_helper"
require "stringio"
require "async"
require "jiggler/server/processor"
require "jiggler/store/fetched"

# A payload that parses but cannot be written back, such as a number like 1e400 (it reads as Infinity, which JSON
# cannot write): when its job fails, it goes to the dead set as it was stored, and the log says why.
class UnwritablePayloadJob
  include Jiggler::Job

  def perform(number) = raise(ArgumentError, "no #{number}")
end

describe "a failing job whose payload cannot be written back" do
  it "goes to the dead set with its raw text, is logged, and its death " \
    "handlers hear of it" do
    told = []
    Jiggler.configure do |config|
      config[:death_handlers] << ->(job, error) do
        told << [job["jid"], error.message]
      end
    end
    log = StringIO.new
    payload = %({"jid":"#{"a" * 24}","name":"UnwritablePayloadJob","args":[1e400],"queue":"default","retries":3})
    fetched = Jiggler::Store::Fetched.new(7, "default", payload)
    record = Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Logger.new(log),
      results: nil
    ).call(fetched)
    assert_equal [fetched, :dead], [record.fetched, record.set]
    assert_equal payload, JSON.parse(record.payload)["raw"]
    assert_equal [["a" * 24, "no Infinity"]], told
    assert_match(
      /dead: UnwritablePayloadJob jid=a{24} queue=default: ArgumentError: no Infinity; \
its failure cannot be written on the job \(.*like 1e400, reads as Infinity\), \
so it goes to the dead set as it was stored/,
      log.string
    )
  end
end

# frozen_string_literal: true

require "test_helper"
require "logger"
require "jiggler/executor"

describe Jiggler::Executor::Options do
  let(:options) { Jiggler::Executor::Options }

  # What proco (junegunn/proco, with option_initializer) raises for each option: TypeError for a value not of the
  # option's class (Numeric, Integer), ArgumentError for one out of range or outside a set of values (batch's true
  # and false). Its logger takes anything; ours raises TypeError for what cannot log.
  {
    interval: {TypeError => [:str, "1", nil], ArgumentError => [-1]},
    threads: {TypeError => [:str, 1.5, nil], ArgumentError => [0, -1]},
    queues: {TypeError => [:str, 2.0], ArgumentError => [0]},
    queue_size: {TypeError => [:str, "10"], ArgumentError => [0]},
    batch_size: {TypeError => [:str, 1.5], ArgumentError => [0]},
    batch: {ArgumentError => [:str, nil, 1, "true"]}
  }.each do |option, errors|
    it "raises proco's error class for a bad #{option}" do
      errors.each do |error_class, values|
        values.each do |value|
          assert_raises(error_class, "#{option} #{value.inspect}") do
            Jiggler::Executor.public_send(option, value)
          end
          assert_raises(error_class, "new(#{option}: #{value.inspect})") do
            Jiggler::Executor.new(option => value)
          end
        end
      end
    end
  end

  it "has proco's settings, with one queue and one thread by default" do
    expected = {
      threads: 1,
      queues: 1,
      queue_size: 1000,
      interval: 0,
      batch: false,
      batch_size: nil,
      logger: nil
    }

    assert_equal expected, options.new.to_h
    assert_equal expected, Jiggler::Executor.new.options
  end

  it "returns a new builder from each setter " \
    "and leaves the old one as it was" do
    base = Jiggler::Executor.batch_size(100)
    threaded = base.threads(4)

    assert_equal 1, base.to_h[:threads]
    assert_equal [4, 100], threaded.to_h.values_at(:threads, :batch_size)
    assert_predicate base, :frozen?
  end

  it "builds the executor, with keyword overrides on top" do
    executor = Jiggler::Executor.threads(2).new(queues: 3)

    assert_kind_of Jiggler::Executor, executor
    assert_equal [2, 3], executor.options.values_at(:threads, :queues)
  end

  it "names an unknown option" do
    error = assert_raises(ArgumentError) { Jiggler::Executor.new(thread: 2) }

    assert_match(
      /unknown executor option :thread \(known: threads, queues/, error.message
    )
  end

  it "refuses counts and sizes that are not positive: ArgumentError" do
    {threads: 0, queues: -1, queue_size: 0, batch_size: 0}.each do |key, value|
      error = assert_raises(ArgumentError) { options.new(key => value) }
      assert_equal "executor #{key} must be a positive Integer (got #{value})",
        error.message
    end
  end

  it "refuses counts and sizes that are not Integers: TypeError, as proco" do
    {
      threads: 1.5, queues: "2", queue_size: "10", batch_size: :many
    }.each do |key, value|
      error = assert_raises(TypeError) { options.new(key => value) }
      assert_equal "executor #{key} must be a positive Integer " \
        "(got #{value.inspect})",
        error.message
    end
    assert_raises(TypeError) { Jiggler::Executor.threads(1.5) }
  end

  it "refuses a negative or infinite interval with ArgumentError, " \
    "one that is not a number with TypeError" do
    [-0.1, Float::INFINITY, Float::NAN].each do |value|
      error = assert_raises(ArgumentError) { Jiggler::Executor.interval(value) }
      assert_match(
        /executor interval must be a number of seconds, 0 or more/,
        error.message
      )
    end
    ["1", nil, :str, 1i].each do |value|
      error = assert_raises(TypeError) { Jiggler::Executor.interval(value) }
      assert_equal "executor interval must be a number of seconds " \
        "(got #{value.inspect})",
        error.message
    end
    assert_equal 0.5, Jiggler::Executor.interval(0.5).to_h[:interval]
  end

  it "takes only true or false for batch: ArgumentError otherwise, as proco" do
    error = assert_raises(ArgumentError) { Jiggler::Executor.batch("yes") }

    assert_equal 'executor batch must be true or false (got "yes")',
      error.message
    assert_nil Jiggler::Executor.batch(true).batch_size(nil).to_h[:batch_size]
  end

  it "takes a logger, chained or as a keyword, and refuses what cannot log" do
    logger = Logger.new(nil)

    assert_same logger, Jiggler::Executor.logger(logger).new.options[:logger]
    assert_same logger,
      Jiggler::Executor.threads(2).logger(logger).new.options[:logger]
    assert_same logger, Jiggler::Executor.new(logger: logger).options[:logger]
    error = assert_raises(TypeError) { Jiggler::Executor.logger($stdout) }
    assert_match(/executor logger must be a Logger \(or nil\)/, error.message)
  end
end

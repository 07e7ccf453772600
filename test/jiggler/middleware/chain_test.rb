# frozen_string_literal: true

require "test_helper"
require "jiggler/middleware/chain"

# Middleware that records its name (and arguments) around the block it wraps.
module ChainTest
  class Step
    def initialize(log, name = self.class.name.split("::").last, **options)
      @log = log
      @name = name
      @options = options
    end

    def call(*)
      @log << "#{@name}#{@options.inspect unless @options.empty?}"
      yield
    end
  end

  class First < Step; end

  class Second < Step; end

  class Third < Step; end

  class Stopper
    def initialize(_log) = nil

    def call(*) = :stopped
  end
end

describe Jiggler::Middleware::Chain do
  let(:log) { [] }
  let(:chain) { Jiggler::Middleware::Chain.new }

  def run_chain(*args) = chain.invoke(*args) { log << "job" }

  it "is empty until something is added" do
    assert chain.empty?
    chain.add(ChainTest::First, log)
    refute chain.empty?
  end

  it "runs middleware in the order added, around the block, " \
    "with constructor arguments" do
    chain.add(ChainTest::First, log)
    chain.add(ChainTest::Second, log, "two", level: 2)
    run_chain(:job, "queue")
    assert_equal ["First", "two{:level=>2}", "job"], log
  end

  it "prepends, inserts before and after, and removes" do
    chain.add(ChainTest::Second, log)
    chain.prepend(ChainTest::First, log)
    chain.insert_after(ChainTest::Second, ChainTest::Third, log)
    assert_equal [ChainTest::First, ChainTest::Second, ChainTest::Third],
      chain.classes
    chain.insert_before(ChainTest::First, ChainTest::Third, log)
    assert_equal [ChainTest::Third, ChainTest::First, ChainTest::Second],
      chain.classes
    chain.remove(ChainTest::First)
    assert_equal [ChainTest::Third, ChainTest::Second], chain.classes
    refute chain.exists?(ChainTest::First)
  end

  it "keeps one entry per class: " \
    "adding again moves it with its new arguments" do
    chain.add(ChainTest::First, log, "old")
    chain.add(ChainTest::Second, log)
    chain.add(ChainTest::First, log, "new")
    run_chain
    assert_equal ["Second", "new", "job"], log
  end

  it "stops at a middleware that does not yield" do
    chain.add(ChainTest::Stopper, log)
    chain.add(ChainTest::First, log)
    assert_equal :stopped, run_chain
    assert_empty log
  end

  it "builds each middleware once, and cannot change once frozen" do
    chain.add(ChainTest::First, log)
    chain.freeze
    built = chain.send(:middlewares)
    run_chain
    assert_same built, chain.send(:middlewares)
    assert_raises(FrozenError) { chain.add(ChainTest::Second, log) }
  end
end

# frozen_string_literal: true

require "test_helper"

describe Jiggler::Executor::Future do
  let(:future) { Jiggler::Executor::Future.new }

  it "returns the value it was resolved with" do
    refute_predicate future, :done?
    assert future.resolve(:value)

    assert_predicate future, :done?
    assert_equal :value, future.get
    assert_equal :value, future.get
  end

  it "re-raises the error it was rejected with, every time" do
    error = KeyError.new("missing")
    future.reject(error)

    assert_same error, assert_raises(KeyError) { future.get }
    assert_same error, assert_raises(KeyError) { future.get }
  end

  it "keeps the first outcome" do
    future.resolve(1)

    refute future.resolve(2)
    refute future.reject(RuntimeError.new)
    assert_equal 1, future.get
  end

  it "wakes every thread waiting on it" do
    # `let` is not thread-safe: build the future here, so the waiters cannot each build their own.
    shared = future
    waiting = Thread::Queue.new
    waiters = Array.new(3) { Thread.new { waiting << true && shared.get } }
    3.times { waiting.pop }
    wait_for(timeout: 5, message: "the waiters to sleep") do
      waiters.all? { |thread| thread.status == "sleep" }
    end
    shared.resolve(:done)

    assert_equal [:done] * 3, waiters.map(&:value)
  end
end

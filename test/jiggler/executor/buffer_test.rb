# frozen_string_literal: true

require "test_helper"

describe Jiggler::Executor::Buffer do
  def build(capacity: 10, limit: 3, interval: 60)
    Jiggler::Executor::Buffer.new(
      capacity: capacity, limit: limit, interval: interval
    )
  end

  def push_all(buffer, items)
    items.map do |item|
      Jiggler::Executor::Future.new.tap { |future| buffer.push(item, future) }
    end
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  it "hands out a full batch at once, oldest items first, with their futures" do
    buffer = build
    futures = push_all(buffer, 1..5)

    assert_equal [[1, 2, 3], futures[0, 3]], buffer.take
    assert_equal 2, buffer.size
  end

  it "hands out a partial batch once its oldest item has waited the interval" do
    buffer = build(interval: 0.2)
    started = now
    push_all(buffer, [1, 2])

    assert_equal [1, 2], buffer.take.first
    assert_operator now - started, :>=, 0.2
  end

  it "hands out each item at once with an interval of 0, or a limit of 1" do
    [
      [build(interval: 0), [1, 2]],
      [build(limit: 1), [1]]
    ].each do |buffer, expected|
      push_all(buffer, [1, 2])
      taker = Thread.new { buffer.take.first }
      assert taker.join(5), "take waited for the interval"
      assert_equal expected, taker.value
    end
  end

  it "counts a full buffer as a full batch" do
    buffer = build(capacity: 2, limit: 5)
    push_all(buffer, [1, 2])

    assert_equal [1, 2], buffer.take.first
  end

  it "wakes a waiting take when the batch fills" do
    buffer = build
    taker = Thread.new { buffer.take.first }
    wait_for(timeout: 5, message: "take to wait") { taker.status == "sleep" }
    push_all(buffer, [1, 2, 3])

    assert taker.join(5), "take waited for the interval"
    assert_equal [1, 2, 3], taker.value
  end

  it "makes push wait while full, until a take makes room" do
    buffer = build(capacity: 2, limit: 1)
    push_all(buffer, [1, 2])
    pusher = Thread.new { push_all(buffer, [3]) }
    wait_for(timeout: 5, message: "push to wait") { pusher.status == "sleep" }

    assert_equal 2, buffer.size
    assert_equal [1], buffer.take.first
    pusher.join
    assert_equal 2, buffer.size
  end

  it "hands out what is left once closed, then nil, and refuses new items" do
    buffer = build
    push_all(buffer, [1, 2])
    buffer.close

    assert_equal [1, 2], buffer.take.first
    assert_nil buffer.take
    refute buffer.push(3, Jiggler::Executor::Future.new)
  end

  it "wakes a waiting push with false when closed" do
    buffer = build(capacity: 1)
    push_all(buffer, [1])
    pusher = Thread.new { buffer.push(2, Jiggler::Executor::Future.new) }
    wait_for(timeout: 5, message: "push to wait") { pusher.status == "sleep" }
    buffer.close

    assert_equal false, pusher.value
  end

  it "hands out nothing once killed, and drains the futures left" do
    buffer = build
    futures = push_all(buffer, [1, 2])
    buffer.kill
    buffer.close

    assert_nil buffer.take
    assert_equal futures, buffer.drain
    assert_equal 0, buffer.size
  end
end

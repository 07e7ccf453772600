# frozen_string_literal: true

require "test_helper"
require "jiggler/server/queue_order"

describe Jiggler::Server::QueueOrder do
  def config(**settings)
    Jiggler::Config.new.tap do |config|
      settings.each { |key, value| config[key] = value }
    end
  end

  it "asks for the queues in strict priority order every time" do
    order = Jiggler::Server::QueueOrder.new(
      config(queues: ["low", ["critical", 5], "default"])
    )
    assert_equal [%w[critical low default]] * 3, Array.new(3) { order.next }
    refute order.weighted?
  end

  it "puts each weighted queue first as often as its share of the weights, " \
    "and every queue in each order" do
    order = Jiggler::Server::QueueOrder.new(
      config(weighted_queues: {"a" => 6, "b" => 3, "c" => 1}),
      random: Random.new(7)
    )
    orders = Array.new(20_000) { order.next }
    assert orders.all? { |queues| queues.sort == %w[a b c] }
    firsts = orders.map(&:first).tally.transform_values do |count|
      count / 20_000.0
    end
    {"a" => 0.6, "b" => 0.3, "c" => 0.1}.each do |queue, share|
      assert_in_delta share, firsts[queue], 0.01, queue
    end
  end
end

describe "weighted_queues (the setting)" do
  def config = Jiggler::Config.new

  it "takes a Hash or pairs of names and positive weights, and says " \
    "what it takes otherwise" do
    subject = config
    subject[:weighted_queues] = {critical: 6, default: 1}
    assert_equal [["critical", 6], ["default", 1]], subject[:weighted_queues]
    assert_equal %w[critical default], subject.queue_names
    [
      {"a" => 0},
      {"a" => 1.5},
      [],
      [["a", 1], ["a", 2]],
      {"bad name" => 1}
    ].each do |value|
      error = assert_raises(Jiggler::Config::InvalidError) do
        config[:weighted_queues] = value
      end
      assert_match(/config\[:weighted_queues\] must be/, error.message)
    end
  end

  it "gives way to queues set in a higher layer, and refuses both in one" do
    subject = config
    subject.apply_file({weighted_queues: {"a" => 2, "b" => 1}})
    assert_equal %w[a b], subject.queue_names
    subject[:queues] = ["c"]
    assert_equal %w[c], subject.queue_names
    subject[:weighted_queues] = {"a" => 1}
    error = assert_raises(Jiggler::Config::InvalidError) { subject.queue_names }
    assert_equal "set queues (strict priority) or weighted_queues " \
      "(a share each), not both", error.message
  end
end

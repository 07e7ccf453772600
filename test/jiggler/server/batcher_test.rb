# frozen_string_literal: true

require "test_helper"
require "json"
require "support/loop_test"
require "jiggler/server/batcher"

# The batcher turns waiting batch items into one batch job once the oldest has waited `batch_interval`, for the batch
# classes this process loaded, and leaves the items of classes it does not know. On each store, without a server.
module BatcherTest
  class Sum
    include Jiggler::Job

    job_options batch_size: 10, batch_interval: 0.05

    def perform_batch(items) = items.sum(&:first)
  end
end

StoreTarget.describe_each("Jiggler::Server::Batcher") do
  include LoopTest

  def batcher
    Jiggler::Server::Batcher.new(
      store: build_store,
      interval: 0.025,
      logger: logger
    )
  end

  def batches_queued
    Jiggler.store.queue_entries("default").map { |payload| JSON.parse(payload) }
  end

  def item(value)
    Jiggler::Payload.dump({
      "jid" => SecureRandom.hex(12),
      "name" => "Unknown::Batch",
      "args" => [value],
      "queue" => "default"
    })
  end

  it "forms a batch of the waiting items once the oldest has waited " \
    "batch_interval" do
    enqueued = now
    BatcherTest::Sum.enqueue_bulk([[1], [2], [3]])
    in_reactor do |task|
      running = batcher
      running.start(parent: task)
      wait_for(timeout: 1, message: "the batch job queued") do
        batches_queued.any?
      end
      assert_operator now - enqueued, :>=, 0.05,
        "not before the oldest item has waited batch_interval"
      running.stop
    end
    assert_equal [["BatcherTest::Sum", [[1], [2], [3]]]],
      batches_queued.map { |job| job.values_at("name", "args") }
    assert_empty Jiggler.store.batch_names
  end

  it "leaves the items of a batch class this process did not load" do
    Jiggler.store.add_to_batch(
      "default",
      "Unknown::Batch",
      [item(1)],
      Time.now.to_f - 60
    )
    BatcherTest::Sum.enqueue(1)
    in_reactor do |task|
      running = batcher
      running.start(parent: task)
      wait_for(timeout: 1, message: "the known batch formed") do
        batches_queued.any?
      end
      running.stop
    end
    assert_equal ["BatcherTest::Sum"], batches_queued.map { |job| job["name"] }
    assert_equal [["default", "Unknown::Batch"]], Jiggler.store.batch_names
  end
end

# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"
require "jiggler/store/sqlite"
require "jiggler/set_actions"
require "support/loop_test"

class ClearedUniqueJob
  include Jiggler::Job

  job_options unique: {ttl: 600}

  def perform(value) = value
end

# Clearing a queue or a set, and deleting a whole set, release the locks of the unique jobs they delete, as deleting
# one job does: the same job can be enqueued again at once, not after the lock's ttl. On each store (StoreTarget).
StoreTarget.describe_each("clearing unique jobs") do
  include LoopTest

  it "releases the lock of a unique job when its queue is cleared" do
    assert ClearedUniqueJob.enqueue(1)
    assert_nil ClearedUniqueJob.enqueue(1), "the lock is held"
    assert_equal 1, Jiggler.store.clear_queue("default")
    assert ClearedUniqueJob.enqueue(1), "enqueued again after the clear"
  end

  it "releases the locks of the unique jobs of every queue and " \
    "of a cleared set" do
    assert ClearedUniqueJob.enqueue(1)
    assert ClearedUniqueJob.with_options(queue: "other").enqueue(2)
    Jiggler.store.clear_all_queues
    assert ClearedUniqueJob.enqueue(1)
    assert ClearedUniqueJob.enqueue_in(600, 3)
    assert_nil ClearedUniqueJob.enqueue_in(600, 3), "the lock is held"
    assert_equal 1, Jiggler.store.clear_set(:scheduled)
    assert ClearedUniqueJob.enqueue_in(600, 3),
      "scheduled again after the clear"
  end

  it "releases the locks of a whole set deleted by the sweep the CLI's " \
    "and the dashboard's delete run" do
    assert ClearedUniqueJob.enqueue_in(600, 4)
    assert_equal 1,
      Jiggler::SetActions.sweep(Jiggler.store, :scheduled, :delete)
    assert ClearedUniqueJob.enqueue_in(600, 4)
  end

  it "keeps a lock that another job took after the cleared one's expired" do
    jid = ClearedUniqueJob.enqueue(5)
    lock = Jiggler::Payload
      .load(Jiggler.store.queue_entries("default").first)
      .dig("unique", "lock")
    assert Jiggler.store.unlock(lock, jid)
    assert Jiggler.store.enqueue_unique(
      lock,
      "other-jid",
      60,
      queue: "elsewhere",
      payload: "{}"
    )
    Jiggler.store.clear_queue("default")
    assert_equal "other-jid", Jiggler.store.lock_holder(lock)
  end
end

# frozen_string_literal: true

require_relative "../reliability/helper"

# A payload nested far deeper than Jiggler::Payload::NESTING_LIMIT, written to a queue by another producer (the Ruby
# client refuses to build it): real `jiggler` processes send it to the dead set as unreadable, with its raw text, and
# go on with every other job; a process restarted after a kill -9 that left it in flight survives its reaper too.
StoreTarget.describe_each("a deeply nested payload") do
  include ReliabilityHelper

  def poison(depth = 3_500)
    %({"jid":"#{SecureRandom.hex(12)}","name":"Reliability::RecordJob","args":[#{
      "[" * depth
    }1#{"]" * depth}],"queue":"default"})
  end

  def ran(count)
    (1..count).all? { |value| recorded_count("run:#{value}") == 1 }
  end

  def assert_dead_as_unreadable(payload)
    wait_for(message: "the deep payload in the dead set") do
      set_jobs(:dead).size == 1
    end
    job = set_jobs(:dead).first
    assert_equal "Jiggler::Payload::MalformedError", job["error_class"]
    assert_match(/nests deeper than 100 levels/, job["error_message"])
    assert_equal payload, job["raw"], "the raw text is kept"
  end

  it "goes to the dead set while the server runs every other job" do
    server = start_reliable("-c", "2")
    payload = poison
    store.push("default", [payload])
    Reliability::RecordJob.enqueue_bulk((1..30).zip)
    wait_for(message: "30 ordinary jobs") { ran(30) }
    assert_dead_as_unreadable(payload)
    assert server.running?, server.log
    assert_match(
      /dead: unreadable job in queue default: payload nests deeper/,
      server.log
    )
  end

  # The deep job goes in flight for a live server that works another queue (as if it had fetched the job); the test
  # then kills that server with kill -9, and a new server's reaper finds the job and must survive it.
  it "is sent to the dead set by the reaper of the next server " \
    "after a kill -9" do
    first = start_reliable("-c", "1", "-q", "other", recovery_timeout: 1)
    payload = poison
    store.push("default", [payload])
    hold(server_id(first), "default", 1)
    assert_equal [payload], held_by(first),
      "the deep job is in flight for the first server"
    first.signal("KILL")
    first.wait
    second = start_reliable("-c", "2", recovery_timeout: 1)
    Reliability::RecordJob.enqueue_bulk((1..30).zip)
    assert_dead_as_unreadable(payload)
    wait_for(message: "30 ordinary jobs") { ran(30) }
    assert second.running?, second.log
  end
end

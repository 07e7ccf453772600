# frozen_string_literal: true

# Lookups by jid (contract.md, "Admin: reads"): where a job waits outside the queues and sets, for Jiggler.status.
module StoreContract
  module Specs
    def describe_lookups
      it "finds a job waiting for a concurrency slot, " \
        "with its key, queue and place in line" do
        payloads = [job, job, job]
        subject.push("default", payloads)
        fetch(limit: 3).each { |fetched| acquire(fetched, limit: 1) }
        first, second, third = payloads.map do |payload|
          subject.slot_waiter(jid_of(payload))
        end
        assert_nil first, "it holds the slot"
        assert_equal ["RecordJob", "default", payloads[1], 0], second
        assert_equal 1, third.last
        assert_nil subject.slot_waiter("u" * 24)
      end

      it "finds a batch item until its batch forms" do
        subject.add_to_batch("default", "BatchJob", [item(1)], now)
        assert_equal ["default", "BatchJob", item(1)],
          subject.batch_item(jid_of(item(1)))
        form_batch("default", "BatchJob", size: 1, due_before: now, now: now)
        assert_nil subject.batch_item(jid_of(item(1)))
      end

      it "finds a step held for its dependencies, with how many are left, " \
        "until it is released" do
        a, b, c = step_jobs(3)
        subject.create_workflow(
          "wf-1", [step(a, 0, [c]), step(b, 0, [c]), step(c, 2, [])]
        )
        assert_equal ["wf-1", 2, c.last], subject.waiting_step(c.first)
        assert_nil subject.waiting_step(a.first),
          "a step without dependencies is queued"
        first, second = fetch(limit: 2)
        complete(first, jid_of(first.payload))
        assert_equal 1, subject.waiting_step(c.first)[1]
        complete(second, jid_of(second.payload))
        assert_nil subject.waiting_step(c.first)
      end

      it "finds the reservation of a job its rate limit deferred, " \
        "until it starts" do
        started, deferred = job, job
        subject.push("default", [started, deferred])
        first, second = fetch(limit: 2)
        assert_equal true, acquire_rate(first, limit: 1, period: 60)
        due = acquire_rate(second, limit: 1, period: 60)
        assert_in_delta due,
          subject.rate_reservation("RecordJob", jid_of(deferred)), 0.001
        assert_nil subject.rate_reservation("RecordJob", jid_of(started))
        assert_nil subject.rate_reservation("OtherKey", jid_of(deferred))
      end
    end
  end
end

# frozen_string_literal: true

require "jiggler/store/cancel_request"

# Long jobs (contract.md, "Long jobs"): where a snoozed or cancelled job goes, and the cancel requests servers hear.
module StoreContract
  module Specs
    def describe_long_jobs
      it "moves a snoozed job from flight to the scheduled set, not counted as a failure" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        snoozed = job(snoozes: 1)
        assert_equal 1, fail_jobs([[fetched, :scheduled, now + 60, snoozed]])
        assert_equal [snoozed], subject.set_entries(:scheduled).map(&:first)
        assert_equal 0, subject.in_flight_count(PROCESS)
        assert_equal({processed: 0, failures: 0, scheduled: 1, retry: 0, dead: 0}, subject.counts)
      end

      it "moves a cancelled job from flight to the dead set, not counted as a failure" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        cancelled = job(cancelled: {"by" => "ops", "at" => now})
        fail_jobs([[fetched, :cancelled, now, cancelled]])
        assert_equal [cancelled], subject.set_entries(:dead).map(&:first)
        assert_equal({processed: 0, failures: 0, scheduled: 0, retry: 0, dead: 1}, subject.counts)
      end

      it "keeps cancel requests for every reader, oldest first" do
        subject.request_cancel("a" * 24, "ops", now - 1)
        subject.request_cancel("b" * 24, "cli", now)
        other = build_store
        requests = other.cancel_requests(now)
        assert_equal [["a" * 24, "ops"], ["b" * 24, "cli"]], requests.map { |request| [request.jid, request.by] }
        assert_kind_of Jiggler::Store::CancelRequest, requests.first
      ensure
        other&.close
      end

      it "drops requests older than its retention" do
        subject.request_cancel("a" * 24, "ops", now - 3_600)
        subject.request_cancel("b" * 24, "ops", now)
        assert_equal ["b" * 24], subject.cancel_requests(now).map(&:jid)
      end

      it "wakes a waiter when a cancel is requested, and not before" do
        waiter_store = build_store
        waiter_store.wait_for_cancels(0.05) # starts listening
        refute waiter_store.wait_for_cancels(0.2), "nothing was requested"
        waiter = Thread.new { waiter_store.wait_for_cancels(5) }
        subject.request_cancel("c" * 24, "ops", now)
        assert_equal true, waiter.value
      ensure
        waiter_store&.close
      end

      it "forgets cancel requests on clear_all" do
        subject.request_cancel("a" * 24, "ops", now)
        subject.clear_all
        assert_empty subject.cancel_requests(now)
      end
    end
  end
end

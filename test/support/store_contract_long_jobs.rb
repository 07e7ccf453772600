# frozen_string_literal: true

require "jiggler/store/cancel_request"
require "jiggler/cancellation"

# Long jobs (contract.md, "Long jobs"): where a snoozed or cancelled job goes, and the cancel requests servers hear.
module StoreContract
  module Specs
    def describe_long_jobs
      it "moves a snoozed job from flight to the scheduled set, " \
        "not counted as a failure" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        snoozed = job(snoozes: 1)
        assert_equal 1, fail_jobs([[fetched, :scheduled, now + 60, snoozed]])
        assert_equal [snoozed], subject.set_entries(:scheduled).map(&:first)
        assert_equal 0, subject.in_flight_count(PROCESS)
        assert_equal(
          {processed: 0, failures: 0, scheduled: 1, retry: 0, dead: 0},
          subject.counts
        )
      end

      it "moves a cancelled job from flight to the dead set, " \
        "not counted as a failure" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        cancelled = job(cancelled: {"by" => "ops", "at" => now})
        fail_jobs([[fetched, :cancelled, now, cancelled]])
        assert_equal [cancelled], subject.set_entries(:dead).map(&:first)
        assert_equal(
          {processed: 0, failures: 0, scheduled: 0, retry: 0, dead: 1},
          subject.counts
        )
      end

      it "keeps cancel requests for every reader, oldest first" do
        subject.request_cancel("a" * 24, "ops", now - 1)
        subject.request_cancel("b" * 24, "cli", now)
        other = build_store
        requests = other.cancel_requests(now)
        assert_equal [["a" * 24, "ops"], ["b" * 24, "cli"]],
          requests.map { |request| [request.jid, request.by] }
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

      it "cancels a job where it waits (queued, scheduled, retrying, " \
        "waiting for a slot, a batch item), marked, once" do
        queued, scheduled, retrying, waiting, holder =
          %w[q s r w h].map { |char| char * 24 }
        subject.push("default", [job(jid: retrying)])
        fail_jobs([[
          fetch(limit: 1).first, :retry, now + 60,
          job(jid: retrying, attempt: 1)
        ]])
        subject.push("default", [job(jid: queued)])
        subject.schedule([[now + 60, job(jid: scheduled)]])
        subject.push("slow", [
          job(jid: holder, queue: "slow"),
          job(jid: waiting, queue: "slow")
        ])
        first, second = fetch(["slow"], limit: 2)
        assert acquire(first, limit: 1)
        refute acquire(second, limit: 1)
        subject.add_to_batch("default", "BatchJob", [item(1), item(2)], now)
        jids = [queued, scheduled, retrying, waiting, jid_of(item(1))]
        assert_equal [true] * 5, jids.map { |jid| cancel_waiting(jid) }
        dead = subject.set_entries(:dead)
          .map { |payload, _| Jiggler::Payload.load(payload) }
        assert_equal jids.sort, dead.map { |entry| entry["jid"] }.sort
        assert(
          dead.all? do |entry|
            entry["cancelled"]["by"] == "ops" &&
              entry["cancelled"]["at"].is_a?(Float)
          end
        )
        assert_equal [{}, {}, 1, 1], [
          subject.queue_sizes,
          subject.waiting_counts,
          subject.batch_sizes.sum { |_, _, count, _| count },
          subject.in_flight_count(PROCESS)
        ]
        assert_equal(
          {processed: 0, failures: 1, scheduled: 0, retry: 0, dead: 5},
          subject.counts,
          "a cancel is not a failure"
        )
        assert_equal [false] * 5, jids.map { |jid| cancel_waiting(jid) },
          "a cancelled job no longer waits"
        refute cancel_waiting(holder),
          "a job in flight is left to the cancel request"
        assert_equal 1, subject.in_flight_count(PROCESS)
      end

      it "releases a cancelled job's unique lock, and only a lock it holds" do
        unique = ->(jid, lock) {
          job(jid: jid, unique: {"lock" => lock, "until" => "success"})
        }
        assert subject.enqueue_unique(
          "RecordJob:a", "u" * 24, 60,
          queue: "default", payload: unique.call("u" * 24, "RecordJob:a")
        )
        assert subject.enqueue_unique(
          "RecordJob:b", "x" * 24, 60,
          queue: "default", payload: job(jid: "x" * 24), at: now + 60
        )
        # its lock is held by another job
        subject.push("default", [unique.call("y" * 24, "RecordJob:b")])
        assert cancel_waiting("u" * 24)
        assert cancel_waiting("y" * 24)
        assert_equal [nil, "x" * 24], [
          subject.lock_holder("RecordJob:a"), subject.lock_holder("RecordJob:b")
        ]
      end

      it "forgets a limit key whose last waiting job was cancelled, " \
        "and gives a freed slot to the next one" do
        subject.push(
          "default", Array.new(3) { |n| job(jid: "j#{n}".ljust(24, "0")) }
        )
        jobs = fetch(limit: 3)
        assert_equal [true, false, false],
          jobs.map { |fetched| acquire(fetched, limit: 1) }
        assert cancel_waiting("j1".ljust(24, "0"))
        assert_equal 1, subject.release_slot(
          "RecordJob", "j0".ljust(24, "0"), limit: 1, ttl: 60
        )
        assert_equal ["j2".ljust(24, "0")],
          subject.queue_entries("default").map { |payload| jid_of(payload) }
        assert_equal({}, subject.waiting_counts)
        assert_equal 0, subject.promote_expired
      end

      it "keeps the dead set's limits when it cancels" do
        subject.push(
          "default", Array.new(3) { |n| job(jid: "k#{n}".ljust(24, "0")) }
        )
        3.times do |n|
          assert subject.cancel_waiting(
            "k#{n}".ljust(24, "0"), now: now, dead_cutoff: 0.0, dead_max: 2
          ) { |payload| payload }
        end
        assert_equal ["k1", "k2"], subject.set_entries(:dead)
          .map { |payload, _| jid_of(payload)[0, 2] }.sort
      end

      it "races a fetch: each job is either cancelled where it waited " \
        "or fetched, never both, none lost" do
        jids = Array.new(300) { |n| format("r%023d", n) }
        subject.push("default", jids.map { |jid| job(jid: jid) })
        fetcher_store = build_store
        fetcher_store.queue_sizes # connected before the race starts
        fetched = []
        started = Queue.new
        fetcher = Thread.new do
          started << true
          loop do
            jobs = fetcher_store.fetch(OTHER_PROCESS, ["default"], limit: 2)
            break if jobs.empty? && fetcher_store.queue_sizes.empty?
            fetched.concat(
              jobs.map { |fetched_job| jid_of(fetched_job.payload) }
            )
            fetcher_store.fetch(
              OTHER_PROCESS, [], limit: 0, acks: jobs.map(&:handle)
            )
            # as a server runs its jobs: either side gets its turns (SQLite holds the GVL)
            sleep(rand * 0.002)
          end
        end
        started.pop
        # Each cancel goes for a job the fetcher is about to take: the second at the head of the queue when read.
        cancelled, missed = [], []
        until (head = subject.queue_entries("default", limit: 2)).empty?
          jid = jid_of(head.last)
          (cancel_waiting(jid) ? cancelled : missed) << jid
          sleep(rand * 0.002)
        end
        fetcher.join
        refute_empty fetched, "the fetcher took none: no race"
        refute_empty cancelled, "the canceller took none: no race"
        dead = subject.set_entries(:dead, limit: 1_000)
          .map { |payload, _| jid_of(payload) }
        assert_empty fetched & cancelled, "fetched and cancelled"
        assert_equal jids.sort, (fetched + cancelled).sort, "each job once"
        assert_equal cancelled.sort, dead.sort
        assert_equal 0, subject.in_flight_count(OTHER_PROCESS)
      ensure
        fetcher&.kill
        fetcher_store&.close
      end

      it "forgets cancel requests on clear_all" do
        subject.request_cancel("a" * 24, "ops", now)
        subject.clear_all
        assert_empty subject.cancel_requests(now)
      end
    end
  end

  # Cancels a waiting job as Jiggler.cancel does, by "ops".
  def cancel_waiting(jid, at: now)
    subject.cancel_waiting(
      jid, now: at, dead_cutoff: at - 3_600, dead_max: 1_000
    ) { |payload| Jiggler::Cancellation.marked(payload, "ops", at) }
  end
end

# frozen_string_literal: true

require "securerandom"
require "jiggler/payload"
require "jiggler/job_rules"
require "jiggler/batch"
require "jiggler/store/fetched"
require "jiggler/store/failed"

# The behaviour every store must have, whatever holds the data. A spec runs it with `include StoreContract` and a
# `build_store` method that returns a fresh, empty store:
#
#   describe Jiggler::Store::Redis do
#     include StoreContract
#     def build_store = Jiggler::Store.client(Jiggler.config)
#   end
#
# The specs use only the store interface (no database calls), so that each implementation runs them unchanged.
module StoreContract
  PROCESS = "host-1:100:abc"
  OTHER_PROCESS = "host-2:200:def"

  # Adds the shared specs to the including spec class.
  def self.included(base)
    base.extend(Specs)
    %i[
      push_and_schedule fetch fail requeue checkpoint enqueue_due processes
      admin admin_for_web invariants wait_for_wake batches results signals
      metrics recurring uniqueness limits long_jobs workflows lookups
    ].each do |group|
      base.public_send(:"describe_#{group}")
    end
  end

  # The specs, grouped as class methods so that `included` stays short.
  module Specs
    def describe_push_and_schedule
      it "pushes jobs to a queue in order and registers the queue" do
        a, b = job, job
        subject.push("default", [a, b])
        assert_equal({"default" => 2}, subject.queue_sizes)
        assert_equal [a, b], subject.queue_entries("default")
      end

      it "pushes nothing for an empty list" do
        subject.push("default", [])
        assert_equal({}, subject.queue_sizes)
      end

      it "pushes more jobs than one write chunk" do
        subject.push("bulk", Array.new(2_500) { job(queue: "bulk") })
        assert_equal({"bulk" => 2_500}, subject.queue_sizes)
      end

      it "schedules jobs in the scheduled set, soonest first" do
        late, soon = job, job
        subject.schedule([[2_000.0, late], [1_000.0, soon]])
        assert_equal [[soon, 1_000.0], [late, 2_000.0]],
          subject.set_entries(:scheduled)
        assert_equal({}, subject.queue_sizes)
      end
    end

    def describe_fetch
      it "fetches in FIFO order and holds the jobs in flight, " \
        "not in the queue" do
        a, b = job, job
        subject.push("default", [a, b])
        assert_equal [a, b], payloads(fetch(limit: 5))
        assert_equal({}, subject.queue_sizes)
        assert_equal 2, subject.in_flight_count(PROCESS)
      end

      it "gives each fetched job a handle of its own, " \
        "unique across fetches, and its queue" do
        subject.push("mail", [job, job, job])
        jobs = fetch(["mail"], limit: 2) + fetch(["mail"], limit: 2)
        assert_equal 3, handles(jobs).uniq.size
        assert_equal %w[mail mail mail], jobs.map(&:queue)
        assert_equal handles(jobs).sort_by(&:to_s),
          handles(subject.in_flight(PROCESS)).sort_by(&:to_s)
      end

      it "never returns more than the limit" do
        subject.push("default", Array.new(5) { job })
        assert_equal 3, payloads(fetch(limit: 3)).size
        assert_equal({"default" => 2}, subject.queue_sizes)
        assert_equal 3, subject.in_flight_count(PROCESS)
      end

      it "fetches a large batch and holds every job of it in flight" do
        subject.push("default", Array.new(6_000) { job })
        fetched = payloads(fetch(limit: 5_000))
        assert_equal [5_000, 5_000, {"default" => 1_000}], [
          fetched.size, subject.in_flight_count(PROCESS), subject.queue_sizes
        ]
      end

      it "takes every job of a higher priority queue before a lower one" do
        low = Array.new(3) { job(queue: "low") }
        high = Array.new(2) { job(queue: "high") }
        subject.push("low", low)
        subject.push("high", high)
        assert_equal high + low.first(2),
          payloads(fetch(%w[high low], limit: 4))
        assert_equal({"low" => 1}, subject.queue_sizes)
      end

      it "returns [] for empty queues and for no queues" do
        assert_equal [], fetch(%w[default other], limit: 5)
        subject.push("default", [job])
        assert_equal [], fetch([], limit: 5)
        assert_equal [], fetch(limit: 0)
        assert_equal({"default" => 1}, subject.queue_sizes)
      end

      it "acknowledges finished jobs: out of flight and counted as processed" do
        subject.push("default", [job, job])
        jobs = fetch(limit: 2)
        assert_equal [], fetch(limit: 0, acks: handles(jobs))
        assert_equal 0, subject.in_flight_count(PROCESS)
        assert_equal 2, subject.counts[:processed]
      end

      it "acknowledges and fetches in one call" do
        subject.push("default", [job])
        first = handles(fetch(limit: 1))
        second = job
        subject.push("default", [second])
        assert_equal [second], payloads(fetch(limit: 1, acks: first))
        assert_equal 1, subject.counts[:processed]
        assert_equal 1, subject.in_flight_count(PROCESS)
      end

      it "records nothing in flight at most once (reliable: false)" do
        subject.push("default", [job, job])
        jobs = fetch(limit: 2, reliable: false)
        assert_equal 2, jobs.size
        assert_equal 0, subject.in_flight_count(PROCESS)
        fetch(limit: 0, acks: handles(jobs), reliable: false)
        assert_equal 2, subject.counts[:processed]
      end

      it "keeps the in-flight jobs of each process apart" do
        subject.push("default", [job, job])
        fetch(limit: 1)
        fetch(limit: 1, process: OTHER_PROCESS)
        assert_equal 1, subject.in_flight_count(PROCESS)
        assert_equal 1, subject.in_flight_count(OTHER_PROCESS)
      end
    end

    def describe_fail
      it "moves a failed job from flight to the retry set and counts it" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        failed = job(attempt: 1)
        fail_jobs([[fetched, :retry, 1_000.0, failed]])
        assert_equal [[failed, 1_000.0]], subject.set_entries(:retry)
        assert_equal 0, subject.in_flight_count(PROCESS)
        assert_equal(
          {processed: 0, failures: 1, scheduled: 0, retry: 1, dead: 0},
          subject.counts
        )
      end

      it "moves a job with no retries left to the dead set" do
        subject.push("default", [job, job])
        first, second = fetch(limit: 2)
        dead, retried = job, job
        fail_jobs(
          [[first, :dead, now, dead], [second, :retry, now + 60, retried]]
        )
        assert_equal [dead], subject.set_entries(:dead).map(&:first)
        assert_equal [retried], subject.set_entries(:retry).map(&:first)
        assert_equal 2, subject.counts[:failures]
      end

      it "keeps at most dead_max jobs in the dead set, dropping the oldest" do
        dead = Array.new(3) { job }
        dead.each_with_index do |payload, index|
          fail_jobs(
            [[unfetched, :dead, now + index, payload]],
            reliable: false,
            dead_max: 2
          )
        end
        assert_equal dead.last(2), subject.set_entries(:dead).map(&:first)
      end

      it "drops dead jobs that died before the cutoff" do
        old, recent = job, job
        fail_jobs([[unfetched, :dead, now - 1_000, old]], reliable: false)
        fail_jobs(
          [[unfetched, :dead, now, recent]],
          reliable: false,
          dead_cutoff: now - 10
        )
        assert_equal [recent], subject.set_entries(:dead).map(&:first)
      end

      it "writes failures at most once (reliable: false) " \
        "without any in-flight record" do
        failed = job
        fail_jobs([[unfetched, :retry, now, failed]], reliable: false)
        assert_equal [failed], subject.set_entries(:retry).map(&:first)
        assert_equal 1, subject.counts[:failures]
      end

      it "writes nothing for a job that is no longer in flight " \
        "(it was requeued)" do
        original = job
        subject.push("default", [original])
        fetched = fetch(limit: 1).first
        subject.requeue(PROCESS)
        fail_jobs([[fetched, :dead, now, job], [fetched, :retry, now, job]])
        assert_equal(
          {scheduled: 0, retry: 0, dead: 0},
          subject.counts.slice(:scheduled, :retry, :dead)
        )
        assert_equal [original], subject.queue_entries("default")
        assert_equal 0, subject.in_flight_count(PROCESS)
      end
    end

    def describe_requeue
      it "puts in-flight jobs back at the head of their own queues" do
        fetched, waiting = job, job
        subject.push("default", [fetched, waiting])
        mail = job(queue: "mail")
        subject.push("mail", [mail])
        fetch(limit: 1)
        fetch(["mail"], limit: 1)
        assert_equal 2, subject.requeue(PROCESS)
        assert_equal [fetched, waiting], subject.queue_entries("default")
        assert_equal [mail], subject.queue_entries("mail")
        assert_equal 0, subject.in_flight_count(PROCESS)
      end

      it "puts requeued jobs back in the order they were fetched" do
        jobs = Array.new(3) { job }
        subject.push("default", jobs)
        fetch(limit: 2)
        fetch(limit: 1)
        subject.requeue(PROCESS)
        assert_equal jobs, subject.queue_entries("default")
      end

      it "moves each job once when requeued twice" do
        subject.push("default", [job, job])
        fetch(limit: 2)
        assert_equal 2, subject.requeue(PROCESS)
        assert_equal 0, subject.requeue(PROCESS)
        assert_equal({"default" => 2}, subject.queue_sizes)
      end

      it "leaves other processes' jobs in flight" do
        subject.push("default", [job, job])
        fetch(limit: 1)
        fetch(limit: 1, process: OTHER_PROCESS)
        assert_equal 1, subject.requeue(PROCESS)
        assert_equal 1, subject.in_flight_count(OTHER_PROCESS)
        assert_equal({"default" => 1}, subject.queue_sizes)
      end

      it "returns 0 for a process with nothing in flight" do
        assert_equal 0, subject.requeue("nobody")
      end

      it "lets a requeued job be fetched again" do
        payload = job
        subject.push("default", [payload])
        fetch(limit: 1)
        subject.requeue(PROCESS)
        assert_equal [payload],
          payloads(fetch(limit: 1, process: OTHER_PROCESS))
      end
    end

    def describe_checkpoint
      it "rewrites the payload of a job held in flight, " \
        "which a recovery then moves" do
        subject.push("default", [job, job])
        fetched, beside = fetch(limit: 2)
        cursor = Jiggler::Payload.dump(
          Jiggler::Payload.load(fetched.payload).merge("cursor" => 41)
        )
        assert subject.checkpoint(PROCESS, fetched.handle, cursor)
        assert_equal [cursor, beside.payload].sort,
          payloads(subject.in_flight(PROCESS)).sort
        assert_equal 2, subject.requeue(PROCESS)
        assert_includes subject.queue_entries("default"), cursor
        refute_includes subject.queue_entries("default"), fetched.payload
      end

      it "rewrites it again at each checkpoint, keeping one job in flight" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        3.times do |index|
          assert subject.checkpoint(PROCESS, fetched.handle, job(cursor: index))
        end
        assert_equal 2, job_cursor(subject.in_flight(PROCESS).first.payload)
        assert_equal 1, subject.in_flight_count(PROCESS)
      end

      it "writes nothing for a job no longer in flight for the process " \
        "(requeued, acknowledged, or another's)" do
        subject.push("default", [job])
        fetched = fetch(limit: 1).first
        subject.requeue(PROCESS)
        refute subject.checkpoint(PROCESS, fetched.handle, job(cursor: 1))
        assert_equal [fetched.payload], subject.queue_entries("default")

        again = fetch(limit: 1, process: OTHER_PROCESS).first
        refute subject.checkpoint(PROCESS, again.handle, job(cursor: 2))
        assert_equal [fetched.payload],
          payloads(subject.in_flight(OTHER_PROCESS))

        fetch(limit: 0, acks: [again.handle], process: OTHER_PROCESS)
        refute subject.checkpoint(OTHER_PROCESS, again.handle, job(cursor: 3))
        assert_equal({}, subject.queue_sizes)
        assert_equal 0, subject.in_flight_count(OTHER_PROCESS)
      end
    end

    def describe_enqueue_due
      it "moves due scheduled jobs to their own queue and leaves later ones" do
        due, later = job(queue: "mail", retry_queue: "slow"), job
        subject.schedule([[now - 5, due], [now + 3_600, later]])
        assert_equal 1, enqueue_due(now)
        assert_equal({"mail" => 1}, subject.queue_sizes)
        assert_equal [later], subject.set_entries(:scheduled).map(&:first)
      end

      it "moves due retries to retry_queue when set, else to queue" do
        fail_jobs([
          [
            unfetched("a"), :retry, now - 5,
            job(queue: "a", retry_queue: "slow")
          ],
          [unfetched("b"), :retry, now - 5, job(queue: "b")],
          [unfetched("c"), :retry, now + 3_600, job(queue: "c")]
        ], reliable: false)
        assert_equal 2, enqueue_due(now)
        assert_equal({"b" => 1, "slow" => 1}, subject.queue_sizes)
        assert_equal 1, subject.counts[:retry]
      end

      it "refreshes enqueued_at and keeps the rest of the job" do
        subject.schedule([[now - 5, job(queue: "mail", enqueued_at: 1.0)]])
        moved_at = now
        enqueue_due(moved_at)
        moved = Jiggler::Payload.load(subject.queue_entries("mail").first)
        assert_in_delta moved_at, moved["enqueued_at"], 0.001
        assert_equal "mail", moved["queue"]
      end

      it "moves more due jobs than one batch" do
        subject.schedule(Array.new(250) { [now - 1, job] })
        assert_equal 250, enqueue_due(now)
        assert_equal({"default" => 250}, subject.queue_sizes)
        assert_equal 0, subject.counts[:scheduled]
      end

      it "moves nothing twice" do
        subject.schedule([[now - 1, job]])
        enqueue_due(now)
        assert_equal 0, enqueue_due(now)
        assert_equal({"default" => 1}, subject.queue_sizes)
      end

      it "tells when the earliest scheduled job or retry is due" do
        assert_nil subject.next_due
        # one time for the whole test: how long each call takes does not matter
        at = now
        subject.schedule([[at + 60, job], [at + 30, job]])
        assert_in_delta at + 30, subject.next_due, 0.001
        fail_jobs([[unfetched("a"), :retry, at + 10, job]], reliable: false)
        assert_in_delta at + 10, subject.next_due, 0.001
        enqueue_due(at + 20)
        assert_in_delta at + 30, subject.next_due, 0.001
      end

      it "does not let a malformed entry block the due jobs" do
        good = job(queue: "mail")
        subject.schedule([[now - 2, "not json"], [now - 1, good]])
        assert_equal 2, enqueue_due(now)
        assert_equal 1, subject.queue_sizes["mail"]
        assert_equal 0, subject.counts[:scheduled]
      end
    end

    def describe_processes
      it "registers processes with their info and forgets them on unregister" do
        subject.beat(PROCESS, '{"concurrency":5}', 60)
        subject.beat(OTHER_PROCESS, "{}", 60)
        assert_equal(
          {PROCESS => '{"concurrency":5}', OTHER_PROCESS => "{}"},
          subject.processes
        )
        subject.unregister(PROCESS)
        assert_equal [OTHER_PROCESS], subject.processes.keys
      end

      it "refreshes a process's info on each beat" do
        subject.beat(PROCESS, '{"busy":1}', 60)
        subject.beat(PROCESS, '{"busy":2}', 60)
        assert_equal({PROCESS => '{"busy":2}'}, subject.processes)
      end

      it "forgets a process whose registration expired" do
        subject.beat(PROCESS, "{}", 0.05)
        wait_for(message: "registration to expire") { subject.processes.empty? }
      end

      it "keeps an unregistered process's in-flight jobs for recovery" do
        subject.push("default", [job])
        fetch(limit: 1)
        subject.beat(PROCESS, "{}", 60)
        subject.unregister(PROCESS)
        assert_equal 1, subject.in_flight_count(PROCESS)
        assert_equal 1, subject.requeue(PROCESS)
      end
    end

    def describe_admin
      it "starts empty" do
        assert_equal(
          {processed: 0, failures: 0, scheduled: 0, retry: 0, dead: 0},
          subject.counts
        )
        assert_equal({}, subject.queue_sizes)
        assert_equal({}, subject.processes)
        assert_equal [], subject.set_entries(:dead)
        assert_equal [], subject.queue_entries("default")
      end

      it "lists only queues that hold jobs" do
        subject.push("a", [job])
        subject.push("b", [job])
        fetch(limit: 0, acks: handles(fetch(["a"], limit: 1)))
        assert_equal({"b" => 1}, subject.queue_sizes)
      end

      it "lists queue entries next to run first, up to a limit" do
        jobs = Array.new(5) { job }
        subject.push("default", jobs)
        assert_equal jobs.first(2), subject.queue_entries("default", limit: 2)
      end

      it "lists set entries with their scores, up to a limit" do
        entries = Array.new(3) { |index| [job, 100.0 + index] }
        subject.schedule(entries.map(&:reverse))
        assert_equal entries.first(2), subject.set_entries(:scheduled, limit: 2)
      end

      it "clears one queue, or all of them" do
        %w[a b c].each { |name| subject.push(name, [job(queue: name)]) }
        subject.clear_queue("a")
        assert_equal %w[b c], subject.queue_sizes.keys
        subject.clear_all_queues
        assert_equal({}, subject.queue_sizes)
      end

      it "clears one set" do
        subject.schedule([[now, job]])
        fail_jobs([[unfetched, :dead, now, job]], reliable: false)
        subject.clear_set(:dead)
        assert_equal [1, 0], subject.counts.values_at(:scheduled, :dead)
      end

      it "resets one counter" do
        fail_jobs([[unfetched, :dead, now, job]], reliable: false)
        subject.push("default", [job])
        fetch(limit: 0, acks: handles(fetch(limit: 1)))
        subject.reset_counter(:processed)
        assert_equal [0, 1], subject.counts.values_at(:processed, :failures)
      end

      it "rejects unknown sets and counters" do
        assert_raises(ArgumentError) { subject.clear_set(:queues) }
        assert_raises(ArgumentError) { subject.set_entries(:processed) }
        assert_raises(ArgumentError) { subject.reset_counter(:dead) }
        assert_raises(
          ArgumentError, "a set is named by a Symbol on every store"
        ) { subject.clear_set("dead") }
      end

      it "clears processes, putting the jobs of gone ones " \
        "back in their queues" do
        subject.push("default", [job, job])
        fetch(limit: 1)
        fetch(limit: 1, process: OTHER_PROCESS)
        subject.beat(PROCESS, "{}", 60)
        subject.beat(OTHER_PROCESS, "{}", 0.05)
        wait_for(message: "registration to expire") do
          subject.processes.keys == [PROCESS]
        end
        subject.clear_processes
        assert_equal({}, subject.processes)
        assert_equal [1, 0, {"default" => 1}], [
          subject.in_flight_count(PROCESS),
          subject.in_flight_count(OTHER_PROCESS),
          subject.queue_sizes
        ]
      end

      it "clears everything" do
        fill
        subject.clear_all
        assert_equal(
          {processed: 0, failures: 0, scheduled: 0, retry: 0, dead: 0},
          subject.counts
        )
        assert_equal [{}, {}, 0], [
          subject.queue_sizes,
          subject.processes,
          subject.in_flight_count(PROCESS)
        ]
      end
    end

    # What the web dashboard needs: pausing queues, paging and filtering, and acting on single jobs.
    def describe_admin_for_web
      it "does not fetch from a paused queue, " \
        "and fetches again once it is resumed" do
        paused, other = job(queue: "paused"), job(queue: "other")
        subject.push("paused", [paused])
        subject.push("other", [other])
        subject.pause_queue("paused")
        assert_equal [other], payloads(fetch(%w[paused other], limit: 5))
        assert_equal [["paused"], {"paused" => 1}],
          [subject.paused_queues, subject.queue_sizes]
        subject.resume_queue("paused")
        assert_equal [[], [paused]], [
          subject.paused_queues, payloads(fetch(%w[paused other], limit: 5))
        ]
      end

      it "still takes pushes into a paused queue, " \
        "and lists each paused queue once" do
        subject.pause_queue("mail")
        subject.pause_queue("mail")
        subject.pause_queue("bulk")
        subject.push("mail", [job(queue: "mail")])
        assert_equal [%w[bulk mail], {"mail" => 1}],
          [subject.paused_queues, subject.queue_sizes]
      end

      it "wakes a waiting server when a queue is resumed" do
        subject.push("mail", [job(queue: "mail")])
        subject.pause_queue("mail")
        subject.wait_for_wake(0.05) # starts listening
        waiter = Thread.new { subject.wait_for_wake(5) }
        wait_for(message: "the waiter to wake") do
          subject.resume_queue("mail")
          !waiter.alive?
        end
        assert_equal :queues, waiter.value
      end

      it "pages through a queue, next to run first" do
        jobs = Array.new(5) { job }
        subject.push("default", jobs)
        assert_equal jobs[2, 2],
          subject.queue_entries("default", limit: 2, offset: 2)
        assert_equal [jobs[4]],
          subject.queue_entries("default", limit: 2, offset: 4)
        assert_equal [], subject.queue_entries("default", limit: 2, offset: 5)
      end

      it "pages through a set, soonest first or latest first" do
        entries = Array.new(5) { |index| [job, 100.0 + index] }
        subject.schedule(entries.map(&:reverse))
        assert_equal entries[1, 2],
          subject.set_entries(:scheduled, limit: 2, offset: 1)
        assert_equal entries.reverse[0, 2],
          subject.set_entries(:scheduled, limit: 2, reverse: true)
        assert_equal [entries[0]],
          subject.set_entries(:scheduled, limit: 2, offset: 4, reverse: true)
      end

      it "filters set entries by class name or jid, then pages" do
        mails = Array.new(3) { |index| [job(name: "MailJob"), 100.0 + index] }
        other = [job(jid: "0123456789abcdef01234567"), 200.0]
        subject.schedule([*mails, other].map(&:reverse) + [[300.0, "not json"]])
        assert_equal mails[1, 2],
          subject.set_entries(:scheduled, filter: "Mail", offset: 1)
        assert_equal [other],
          subject.set_entries(:scheduled, filter: "89abcdef")
        assert_equal [], subject.set_entries(:scheduled, filter: "<script>")
      end

      it "finds a set entry by its score and jid" do
        wanted, twin = job, job
        subject.schedule([[100.5, wanted], [100.5, twin], [200.0, job]])
        assert_equal wanted,
          subject.set_entry(:scheduled, 100.5, jid_of(wanted))
        assert_nil subject.set_entry(:scheduled, 200.0, jid_of(wanted))
        assert_nil subject.set_entry(:retry, 100.5, jid_of(wanted))
      end

      it "deletes set entries by score and jid, skipping those already gone" do
        first, second, kept = job, job, job
        subject.schedule([[100.0, first], [101.0, second], [102.0, kept]])
        entries = [
          [100.0, jid_of(first)],
          [101.0, jid_of(second)],
          [101.0, jid_of(second)],
          [5.0, "gone"]
        ]
        assert_equal 2, subject.delete_set_entries(:scheduled, entries)
        assert_equal [kept], subject.set_entries(:scheduled).map(&:first)
      end

      it "moves set entries to their queues now: scheduled to queue, " \
        "retries and dead to retry_queue" do
        scheduled = job(queue: "mail", retry_queue: "slow")
        subject.schedule([[now + 3_600, scheduled]])
        retried, dead = job(queue: "a", retry_queue: "slow"), job(queue: "b")
        fail_jobs([
          [unfetched("a"), :retry, now + 3_600, retried],
          [unfetched("b"), :dead, now, dead]
        ], reliable: false)
        moved = [
          [:scheduled, scheduled], [:retry, retried], [:dead, dead]
        ].sum do |set, payload|
          enqueue_set_entries(set, [
            subject.set_entries(set).first.reverse
              .tap { |pair| pair[1] = jid_of(payload) }
          ])
        end
        assert_equal [3, {"b" => 1, "mail" => 1, "slow" => 1}],
          [moved, subject.queue_sizes]
        assert_equal(
          {scheduled: 0, retry: 0, dead: 0},
          subject.counts.slice(:scheduled, :retry, :dead)
        )
      end

      it "refreshes enqueued_at of the jobs it moves, and moves each once" do
        payload = job(enqueued_at: 1.0)
        subject.schedule([[now + 60, payload]])
        entry = [[subject.set_entries(:scheduled).first.last, jid_of(payload)]]
        moved_at = now
        assert_equal 1, enqueue_set_entries(:scheduled, entry, now: moved_at)
        assert_equal 0, enqueue_set_entries(:scheduled, entry, now: moved_at)
        assert_in_delta moved_at,
          Jiggler::Payload.load(
            subject.queue_entries("default").first
          )["enqueued_at"],
          0.001
      end

      it "kills scheduled and retry entries: to the dead set, with died_at" do
        scheduled, retried = job, job
        subject.schedule([[now + 60, scheduled]])
        fail_jobs([[unfetched, :retry, now + 60, retried]], reliable: false)
        killed_at = now
        [[:scheduled, scheduled], [:retry, retried]].each do |set, payload|
          entry = [subject.set_entries(set).first.last, jid_of(payload)]
          assert_equal 1, kill_set_entries(set, [entry], now: killed_at)
        end
        dead = subject.set_entries(:dead)
        assert_equal(
          [[jid_of(scheduled), killed_at], [jid_of(retried), killed_at]].sort,
          dead.map { |entry, score| [jid_of(entry), score] }.sort
        )
        assert_equal [killed_at] * 2,
          dead.map { |entry, _| Jiggler::Payload.load(entry)["died_at"] }
        assert_equal [0, 0, 2],
          subject.counts.values_at(:scheduled, :retry, :dead)
      end

      it "refuses to kill dead entries" do
        assert_raises(ArgumentError) { kill_set_entries(:dead, []) }
      end

      it "deletes one job from a queue" do
        first, second = job, job
        subject.push("default", [first, second, first])
        assert_equal true, subject.delete_queue_entry("default", first)
        assert_equal [second, first], subject.queue_entries("default")
        assert_equal false, subject.delete_queue_entry("default", job)
        assert_equal false, subject.delete_queue_entry("other", second)
      end

      it "forgets paused queues on clear_all" do
        subject.pause_queue("mail")
        subject.clear_all
        assert_equal [], subject.paused_queues
      end

      it "keeps a job in exactly one place through the dashboard's moves" do
        payload = job
        subject.schedule([[now + 60, payload]])
        places = [jobs_held]
        entry = [subject.set_entries(:scheduled).first.last, jid_of(payload)]
        kill_set_entries(:scheduled, [entry], now: 123.0)
        places << jobs_held
        enqueue_set_entries(:dead, [[123.0, jid_of(payload)]])
        places << jobs_held
        assert_equal [1, 1, 1], places
      end
    end

    def describe_invariants
      it "keeps a job in exactly one place through every move" do
        places = [1]
        subject.schedule([[now - 1, job]])
        places << jobs_held
        enqueue_due(now)
        places << jobs_held
        fetched = fetch(limit: 1).first
        places << jobs_held
        fail_jobs([[fetched, :retry, now - 1, job]])
        places << jobs_held
        enqueue_due(now)
        places << jobs_held
        fetch(limit: 1)
        subject.requeue(PROCESS)
        places << jobs_held
        assert_equal [1] * 7, places
      end
    end

    def describe_wait_for_wake
      it "wakes a waiter when a job is pushed to an empty queue" do
        subject.wait_for_wake(0.05) # starts listening
        waiter = Thread.new { subject.wait_for_wake(5) }
        subject.push("default", [job])
        assert_equal :queues, waiter.value
      end

      it "waits on its first call until a push comes" do
        # built here: memoizing it inside the thread too would race
        store = subject
        waiter = Thread.new { store.wait_for_wake(5) }
        wait_for(message: "the waiter to wake") do
          # each to an empty queue
          subject.push("q#{SecureRandom.hex(4)}", [job])
          !waiter.alive?
        end
        assert_equal :queues, waiter.value
      end

      it "returns nil when nothing is announced before the timeout" do
        assert_nil subject.wait_for_wake(0.2)
      end

      it "wakes a waiter when a job is scheduled sooner than every other, " \
        "and only then" do
        subject.schedule([[now + 60, job]])
        subject.wait_for_wake(0.05) # starts listening
        subject.schedule([[now + 120, job], [now + 90, job]])
        assert_nil subject.wait_for_wake(0.2),
          "a job due later than the earliest is not announced"

        waiter = Thread.new { subject.wait_for_wake(5) }
        subject.schedule([[now + 120, job], [now + 30, job]])
        assert_equal :schedule, waiter.value
      end
    end
  end

  # Batch items and results: the specs, continued.
  module Specs
    def describe_batches
      it "keeps batch items apart from the queues until a batch is formed" do
        assert_equal 1,
          subject.add_to_batch("default", "BatchJob", [item(1)], 100.0)
        assert_equal 3,
          subject.add_to_batch("default", "BatchJob", [item(2), item(3)], 101.0)
        subject.add_to_batch("mail", "BatchJob", [item(4)], 102.0)
        assert_equal({}, subject.queue_sizes)
        assert_equal [
          ["default", "BatchJob", 3, 100.0], ["mail", "BatchJob", 1, 102.0]
        ], subject.batch_sizes
        assert_equal [%w[default BatchJob], %w[mail BatchJob]],
          subject.batch_names
      end

      it "forms a full batch from the oldest items, in enqueue order, " \
        "and leaves a partial one until it is due" do
        subject.add_to_batch(
          "default", "BatchJob", (1..5).map { |n| item(n) }, now
        )
        assert_equal 2, form_batch(
          "default", "BatchJob", size: 2, due_before: now - 60, now: now
        )
        assert_equal 2, form_batch(
          "default", "BatchJob", size: 2, due_before: now - 60, now: now
        )
        assert_equal 0, form_batch(
          "default", "BatchJob", size: 2, due_before: now - 60, now: now
        )
        batches = subject.queue_entries("default")
          .map { |payload| Jiggler::Payload.load(payload) }
        assert_equal [[[1], [2]], [[3], [4]]],
          batches.map { |batch| batch["args"] }
        assert_equal %w[BatchJob BatchJob],
          batches.map { |batch| batch["name"] }
        assert_equal 4, batches.flat_map { |batch| batch["jids"] }.uniq.size
        assert_equal 1, form_batch(
          "default", "BatchJob", size: 2, due_before: now + 1, now: now
        )
        assert_equal 3, subject.queue_sizes["default"]
        assert_empty subject.batch_sizes
      end

      it "forms a batch once when two stores race for the same items" do
        other = build_store
        subject.add_to_batch("default", "BatchJob", [item(1), item(2)], now)
        taken = [subject, other].map do |store|
          form_batch(
            "default", "BatchJob",
            size: 2, due_before: 0, now: now, store: store
          )
        end
        assert_equal [2, 0], taken
        assert_equal({"default" => 1}, subject.queue_sizes)
      ensure
        other&.close
      end

      it "sends an unreadable item to the dead set and batches the rest" do
        subject.add_to_batch(
          "default", "BatchJob", [item(1), "{not json", item(2)], now
        )
        assert_equal 3, form_batch(
          "default", "BatchJob", size: 3, due_before: 0, now: now
        )
        assert_equal [[[1], [2]]],
          subject.queue_entries("default")
            .map { |payload| Jiggler::Payload.load(payload)["args"] }
        dead = Jiggler::Payload.load(subject.set_entries(:dead).first.first)
        assert_equal "{not json", dead["raw"]
      end

      it "puts due scheduled batch items in their batch, " \
        "and retries of them in their queue" do
        scheduled = (1..3).map do |n|
          job(name: "BatchJob", args: [n], batch_item: true)
        end
        subject.schedule([
          [now - 2, scheduled[0]],
          [now - 1, scheduled[1]],
          [now + 3_600, scheduled[2]],
          [now - 1, job]
        ])
        fail_jobs([[
          unfetched("mail"), :retry, now - 1,
          job(name: "BatchJob", args: [4], queue: "mail", batch_item: true)
        ]], reliable: false)
        assert_equal 4, enqueue_due(now)
        assert_equal 0, enqueue_due(now)
        assert_equal({"default" => 1, "mail" => 1}, subject.queue_sizes)
        assert_equal [["default", "BatchJob", 2]],
          subject.batch_sizes.map { |sizes| sizes.first(3) }
        assert_equal 2, form_batch(
          "default", "BatchJob", size: 2, due_before: 0, now: now
        )
        batch = subject.queue_entries("default")
          .map { |payload| Jiggler::Payload.load(payload) }
          .find { |job| job["jids"] }
        assert_equal [[1], [2]], batch["args"].sort
        assert_equal 1, subject.counts[:scheduled]
      end

      it "clears a queue's batch items with the queue" do
        subject.add_to_batch("default", "BatchJob", [item(1)], now)
        subject.add_to_batch("mail", "BatchJob", [item(2)], now)
        subject.clear_queue("mail")
        assert_equal [%w[default BatchJob]], subject.batch_names
        subject.clear_all_queues
        assert_empty subject.batch_names
      end
    end

    def describe_results
      it "keeps results until they expire" do
        subject.save_results(
          [["a" * 24, %({"value":1})], ["b" * 24, %({"value":2})]], 60
        )
        subject.save_results([["c" * 24, %({"value":3})]], 0.05)
        assert_equal [%({"value":1}), %({"value":2}), %({"value":3})],
          %w[a b c].map { |char| subject.result(char * 24) }
        sleep 0.1
        assert_nil subject.result("c" * 24)
        assert_nil subject.result("d" * 24)
      end
    end
  end

  # Operating servers: quiet and stop requests, per-class metrics. The specs, continued.
  module Specs
    def describe_signals
      it "hands a process the requests sent to it, oldest first, once" do
        subject.signal_process(PROCESS, "quiet")
        subject.signal_process(PROCESS, "stop")
        subject.signal_process(OTHER_PROCESS, "stop")
        assert_equal %w[quiet stop], subject.take_signals(PROCESS)
        assert_empty subject.take_signals(PROCESS)
        other = build_store
        assert_equal %w[stop], other.take_signals(OTHER_PROCESS)
      ensure
        other&.close
      end

      it "forgets the requests on clear_all" do
        subject.beat(PROCESS, "{}", 60)
        subject.signal_process(PROCESS, "quiet")
        subject.clear_all
        assert_empty subject.take_signals(PROCESS)
      end
    end

    def describe_metrics
      it "adds the counts of every writer, by minute and class, " \
        "and in the totals" do
        minute = Time.now.to_i / 60
        subject.add_metrics(
          minute - 1, {"A" => counts(2, 1, 30, 5 => 2, 9 => 1)}, retention: 3600
        )
        subject.add_metrics(
          minute,
          {"A" => counts(1, 0, 10, 5 => 1), "B" => counts(4, 0, 8, 0 => 4)},
          retention: 3600
        )
        other = build_store
        other.add_metrics(
          minute, {"A" => counts(0, 2, 50, 9 => 2)}, retention: 3600
        )
        read = subject.metrics(minute - 5, minute)
        assert_equal [minute - 1, minute], read.keys.sort
        assert_equal counts(1, 2, 60, 5 => 1, 9 => 2), read[minute]["A"]
        assert_equal counts(4, 0, 8, 0 => 4), read[minute]["B"]
        assert_equal(
          {
            "A" => counts(3, 3, 90, 5 => 3, 9 => 3),
            "B" => counts(4, 0, 8, 0 => 4)
          },
          subject.metrics_totals
        )
        assert_empty subject.metrics(minute + 1, minute + 10)
      ensure
        other&.close
      end

      it "drops a minute its retention has passed, and keeps its totals" do
        minute = Time.now.to_i / 60
        subject.add_metrics(
          minute - 30, {"A" => counts(1, 0, 10, 5 => 1)}, retention: 60
        )
        subject.add_metrics(
          minute, {"B" => counts(1, 0, 10, 5 => 1)}, retention: 60
        )
        assert_equal [minute], subject.metrics(minute - 60, minute).keys
        assert_equal %w[A B], subject.metrics_totals.keys.sort
      end

      it "deletes every minute and the totals on clear_all" do
        minute = Time.now.to_i / 60
        [minute - 2, minute].each do |at|
          subject.add_metrics(
            at, {"A" => counts(1, 0, 10, 5 => 1)}, retention: 3600
          )
        end
        subject.clear_all
        assert_empty subject.metrics(minute - 5, minute)
        assert_empty subject.metrics_totals
      end
    end
  end

  # Metrics counts: succeeded and failed runs, microseconds, and runs by histogram bucket.
  def counts(processed, failed, micros, buckets)
    Jiggler::Metrics::Counts.new(
      processed, failed, micros, Hash.new(0).merge(buckets)
    )
  end

  # The store under test, built once per test.
  def subject = @subject ||= build_store

  def teardown
    @subject&.close
    super
  end

  # A job payload as the client writes it.
  def job(queue: "default", **extra)
    data = {
      "jid" => SecureRandom.hex(12),
      "name" => "RecordJob",
      "args" => [1],
      "queue" => queue,
      "retries" => 3
    }
    Jiggler::Payload.dump(data.merge(extra.transform_keys(&:to_s)))
  end

  def now = Time.now.to_f

  def job_cursor(payload) = Jiggler::Payload.load(payload)["cursor"]

  # A batch item's payload as the client writes it: the jids of one enqueue call rise with the items.
  def item(value)
    job(name: "BatchJob", args: [value], jid: format("%024d", value))
  end

  def fetch(
    queues = ["default"], limit:, acks: [], reliable: true, process: PROCESS
  )
    subject.fetch(process, queues, limit: limit, acks: acks, reliable: reliable)
  end

  # The moves that need a decision about jobs, decided as the server and the dashboard decide them.
  def enqueue_due(at)
    subject.enqueue_due(at) do |from, payload|
      Jiggler::JobRules.due(from, payload, at)
    end
  end

  def enqueue_set_entries(set, entries, now: Time.now.to_f)
    subject.enqueue_set_entries(set, entries, now: now) do |from, payload|
      Jiggler::JobRules.due(from, payload, now)
    end
  end

  def kill_set_entries(set, entries, now: Time.now.to_f)
    subject.kill_set_entries(set, entries, now: now) do |payload|
      Jiggler::JobRules.killed(payload, now)
    end
  end

  def form_batch(queue, name, store: subject, **options)
    store.form_batch(queue, name, **options) do |items|
      Jiggler::Batch.build(queue, name, items, options[:now])
    end
  end

  # Fails jobs given as [fetched, set, at, payload] lists.
  def fail_jobs(failures, reliable: true, dead_cutoff: 0.0, dead_max: 100)
    failed = failures.map do |fetched, set, at, payload|
      Jiggler::Store::Failed.new(
        fetched: fetched, set: set, at: at, payload: payload
      )
    end
    subject.fail(
      PROCESS,
      failed,
      reliable: reliable,
      dead_cutoff: dead_cutoff,
      dead_max: dead_max
    )
  end

  def handles(jobs) = jobs.map(&:handle)

  # A job failed at most once, never held in flight: no handle.
  def unfetched(queue = "default")
    Jiggler::Store::Fetched.new(nil, queue, nil)
  end

  def jid_of(payload) = Jiggler::Payload.load(payload)["jid"]

  def payloads(jobs) = jobs.map(&:payload)

  # How many jobs are anywhere: queued, in flight for PROCESS, scheduled, retrying or dead.
  def jobs_held
    subject.queue_sizes.values.sum +
      subject.in_flight_count(PROCESS) +
      subject.counts.values_at(:scheduled, :retry, :dead).sum
  end

  # Puts something in every place the store has.
  def fill
    subject.push("default", [job, job, job])
    subject.push("mail", [job(queue: "mail")])
    subject.schedule([[now + 60, job]])
    subject.beat(PROCESS, "{}", 60)
    first, second, third = fetch(limit: 3)
    fetch(limit: 0, acks: [first.handle])
    fail_jobs([[second, :retry, now + 60, job], [third, :dead, now, job]])
    subject.push("default", [job])
    fetch(limit: 1)
    subject.add_to_batch("default", "BatchJob", [item(1)], now)
    subject.signal_process(PROCESS, "quiet")
    subject.add_metrics(
      Time.now.to_i / 60,
      {"RecordJob" => counts(1, 1, 20, 3 => 2)},
      retention: 60
    )
  end

  # ---------------------------------------------------------------------------------------------------------------
  # Flow control: recurring tasks (contract.md, "Recurring tasks").
  # ---------------------------------------------------------------------------------------------------------------
  module Specs
    def describe_recurring
      it "enqueues each tick of a task once, " \
        "and never an earlier tick after a later one" do
        assert subject.enqueue_recurring("report", 100, "default", job)
        refute subject.enqueue_recurring("report", 100, "default", job)
        refute subject.enqueue_recurring("report", 99, "default", job)
        assert subject.enqueue_recurring("report", 101, "default", job)
        assert subject.enqueue_recurring("other", 100, "default", job)
        assert_equal({"default" => 3}, subject.queue_sizes)
      end

      it "enqueues a tick once when many threads ask at once" do
        stores = Array.new(4) { build_store }
        wins = stores.map do |store|
          Thread.new do
            (1..50).count do |tick|
              store.enqueue_recurring("report", tick, "default", job)
            end
          end
        end.map(&:value)
        stores.each(&:close)
        assert_equal 50, wins.sum
        assert_equal({"default" => 50}, subject.queue_sizes)
      end

      it "skips ticks of a disabled task, and runs it by hand all the same" do
        subject.save_recurring({"report" => %({"class":"RecordJob"})})
        subject.enable_recurring("report", false)
        refute subject.enqueue_recurring("report", 100, "default", job)
        assert subject.enqueue_recurring(
          "report", nil, "default", job, now: 123.0
        )
        assert_equal [["report", %({"class":"RecordJob"}), 123.0, false]],
          subject.recurring_tasks
        subject.enable_recurring("report", true)
        assert subject.enqueue_recurring("report", 100, "default", job)
        assert_equal({"default" => 2}, subject.queue_sizes)
      end

      it "takes a unique job's lock with the tick's claim; while another " \
        "job holds it, claims the tick and pushes nothing" do
        lock = ["RecordJob:a", "j2", 60]
        subject.save_recurring({"report" => "{}"})
        assert subject.enqueue_unique(
          "RecordJob:a", "j1", 60, queue: "default", payload: job
        )
        assert_nil subject.enqueue_recurring(
          "report", 100, "default", job, now: 100.5, unique: lock
        )
        refute subject.enqueue_recurring(
          "report", 100, "default", job, unique: lock
        ), "the tick stays claimed"
        assert_nil subject.enqueue_recurring(
          "report", nil, "default", job, unique: lock
        ), "nor by hand"
        assert_equal [["report", "{}", nil, true]], subject.recurring_tasks,
          "no run is recorded"
        assert_equal "j1", subject.lock_holder("RecordJob:a")
        assert subject.unlock("RecordJob:a", "j1")
        assert subject.enqueue_recurring(
          "report", 101, "default", job,
          now: 101.5, unique: ["RecordJob:a", "j3", 60]
        )
        assert_equal ["j3", {"default" => 2}],
          [subject.lock_holder("RecordJob:a"), subject.queue_sizes]
        assert_nil subject.enqueue_recurring(
          "report", 102, "default", job, unique: ["RecordJob:a", "j4", 60]
        )
        assert_equal [["report", "{}", 101.5, true]], subject.recurring_tasks
      end

      it "lists the tasks last saved, with their last run, " \
        "and forgets the others" do
        subject.save_recurring({"a" => "{}", "b" => "{}"})
        subject.enqueue_recurring("b", 100, "default", job, now: 100.5)
        assert_equal [["a", "{}", nil, true], ["b", "{}", 100.5, true]],
          subject.recurring_tasks
        subject.save_recurring({"b" => %({"x":1})})
        assert_equal [["b", %({"x":1}), 100.5, true]], subject.recurring_tasks
        refute subject.enqueue_recurring("b", 100, "default", job)
      end
    end

    def describe_uniqueness
      it "writes a unique job only while its lock is free, " \
        "and frees it for its holder only" do
        assert subject.enqueue_unique(
          "RecordJob:a", "j1", 60, queue: "default", payload: job
        )
        refute subject.enqueue_unique(
          "RecordJob:a", "j2", 60, queue: "default", payload: job
        )
        assert subject.enqueue_unique(
          "RecordJob:b", "j3", 60, queue: "default", payload: job
        )
        assert_equal "j1", subject.lock_holder("RecordJob:a")
        refute subject.unlock("RecordJob:a", "j2")
        assert subject.unlock("RecordJob:a", "j1")
        assert_nil subject.lock_holder("RecordJob:a")
        assert subject.enqueue_unique(
          "RecordJob:a", "j4", 60, queue: "default", payload: job
        )
        assert_equal({"default" => 3}, subject.queue_sizes)
      end

      it "schedules a unique job, and lets its lock expire after its ttl" do
        assert subject.enqueue_unique(
          "RecordJob:a", "j1", 0.05,
          queue: "default", payload: job, at: now + 60
        )
        assert_equal 1, subject.counts[:scheduled]
        sleep 0.1
        assert_nil subject.lock_holder("RecordJob:a")
        assert subject.enqueue_unique(
          "RecordJob:a", "j2", 60, queue: "default", payload: job
        )
      end

      it "writes one job when many threads enqueue the same one at once" do
        stores = Array.new(4) { build_store }
        wins = stores.map do |store|
          Thread.new do
            (1..25).count do |n|
              store.enqueue_unique(
                "RecordJob:a", "j#{n}", 60, queue: "default", payload: job
              )
            end
          end
        end.map(&:value)
        stores.each(&:close)
        assert_equal 1, wins.sum
        assert_equal({"default" => 1}, subject.queue_sizes)
      end
    end

    def describe_limits
      it "gives slots up to the limit, then moves jobs from flight " \
        "to the key's waiting list, off the queue" do
        payloads = Array.new(4) { |n| job(jid: "j#{n}") }
        subject.push("default", payloads)
        jobs = fetch(limit: 4)
        assert_equal [true, true, false, false],
          jobs.map { |fetched| acquire(fetched, limit: 2) }
        assert_equal 2, subject.in_flight_count(PROCESS)
        assert_equal({"default" => 2}, subject.waiting_counts)
        assert_equal({}, subject.queue_sizes)
        assert acquire(jobs.first, limit: 2),
          "a job that holds a slot finds it again"
      end

      it "gives a freed slot to the oldest waiting job, " \
        "at the head of its queue, reserved for it" do
        subject.push("default", Array.new(3) { |n| job(jid: "j#{n}") })
        jobs = fetch(limit: 3)
        jobs.each { |fetched| acquire(fetched, limit: 1) }
        subject.push("default", [job(jid: "late")])
        assert_equal 1,
          subject.release_slot("RecordJob", "j0", limit: 1, ttl: 60)
        assert_equal ["j1", "late"],
          subject.queue_entries("default").map { |payload| jid_of(payload) }
        assert_equal({"default" => 1}, subject.waiting_counts)
        other = fetch(limit: 1).first
        assert_equal "j1", jid_of(other.payload)
        assert acquire(other, limit: 1)
        refute acquire(fetch(limit: 1).first, limit: 1),
          "the late job waits behind j2"
        assert_equal 2, subject.waiting_counts["default"]
        # Waiting jobs come back oldest first: j2, which waited before the late job, then the late job.
        subject.release_slot("RecordJob", "j1", limit: 1, ttl: 60)
        assert_equal ["j2"],
          subject.queue_entries("default").map { |payload| jid_of(payload) },
          "j2 came back first"
        assert acquire(fetch(limit: 1).first, limit: 1)
        subject.release_slot("RecordJob", "j2", limit: 1, ttl: 60)
        assert_equal ["late"],
          subject.queue_entries("default").map { |payload| jid_of(payload) }
        assert_equal({}, subject.waiting_counts)
      end

      it "moves jobs waiting on slots that expired" do
        subject.push("default", [job(jid: "j0"), job(jid: "j1")])
        first, second = fetch(limit: 2)
        acquire(first, limit: 1, ttl: 0.05)
        refute acquire(second, limit: 1, ttl: 0.05)
        assert_equal 0, subject.promote_expired
        sleep 0.1
        assert_equal 1, subject.promote_expired
        assert_equal ["j1"],
          subject.queue_entries("default").map { |payload| jid_of(payload) }
        assert_equal({}, subject.waiting_counts)
      end

      it "starts up to the limit in a period, then schedules jobs in order, " \
        "each when the budget allows" do
        subject.push("default", Array.new(5) { |n| job(jid: "j#{n}") })
        started = now
        results = fetch(limit: 5).map do |fetched|
          acquire_rate(fetched, limit: 2, period: 10)
        end
        assert_equal [true, true], results.first(2)
        dues = results.drop(2)
        assert_equal dues.sort, dues, "waiting jobs come back in order"
        assert_in_delta started + 10, dues[0], 1
        assert_in_delta started + 20, dues[2], 1
        assert_equal 3, subject.counts[:scheduled]
        assert_equal 2, subject.in_flight_count(PROCESS)
      end

      it "starts a job that comes back when the budget allows, " \
        "and schedules it again if it still does not" do
        subject.push("default", [job(jid: "j0"), job(jid: "j1")])
        first, second = fetch(limit: 2)
        assert acquire_rate(first, limit: 1, period: 0.2)
        due = acquire_rate(second, limit: 1, period: 0.2)
        enqueue_due(due + 0.01)
        back = fetch(limit: 1).first
        assert_equal "j1", jid_of(back.payload)
        sleep [due - now, 0].max + 0.05
        assert acquire_rate(back, limit: 1, period: 0.2)
      end

      it "wakes schedulers for a job it schedules only when that job " \
        "is due sooner than every other" do
        subject.schedule([[now + 30, job(jid: "s0")]])
        subject.push("default", Array.new(4) { |n| job(jid: "j#{n}") })
        jobs = fetch(limit: 4)
        rate = ->(fetched, period) {
          subject.acquire_rate(
            PROCESS,
            fetched,
            key: "K#{period}",
            limit: 1,
            period: period,
            jid: jid_of(fetched.payload),
            reliable: true
          )
        }
        assert [rate.call(jobs[0], 60), rate.call(jobs[2], 5)].all?(true)
        # starts listening
        subject.wait_for_wake(0.05)
        assert_operator rate.call(jobs[1], 60), :>, now + 30
        assert_nil subject.wait_for_wake(0.2),
          "a job due after the earliest is not announced"
        waiter = Thread.new { subject.wait_for_wake(5) }
        assert_operator rate.call(jobs[3], 5), :<, now + 30
        assert_equal :schedule, waiter.value
      end

      it "leaves a job that is no longer in flight for this process" do
        subject.push("default", [job(jid: "j0"), job(jid: "j1")])
        first, second = fetch(limit: 2)
        acquire(first, limit: 1)
        subject.requeue(PROCESS, [second])
        assert_nil acquire(second, limit: 1)
        assert_equal({}, subject.waiting_counts)
      end

      it "clears locks, slots, waiting jobs, rate windows and recurring " \
        "claims on clear_all, keeping the tasks' settings" do
        subject.push(
          "default", [job(jid: "j0"), job(jid: "j1"), job(jid: "j2")]
        )
        first, second, third = fetch(limit: 3)
        assert [
          acquire(first, limit: 1),
          !acquire(second, limit: 1),
          acquire_rate(third, limit: 1, period: 60)
        ].all?
        assert subject.enqueue_unique(
          "RecordJob:a", "u1", 60, queue: "default", payload: job
        )
        subject.save_recurring({"report" => "{}"})
        assert subject.enqueue_recurring(
          "report", 100, "default", job, now: 100.5
        )
        subject.enable_recurring("report", false)
        subject.clear_all
        assert_equal [nil, {}, [["report", "{}", nil, true]]], [
          subject.lock_holder("RecordJob:a"),
          subject.waiting_counts,
          subject.recurring_tasks
        ]
        subject.push("default", [job(jid: "k0"), job(jid: "k1")])
        slot, start = fetch(limit: 2)
        assert acquire(slot, limit: 1), "the slot j0 held is free"
        assert_equal true, acquire_rate(start, limit: 1, period: 60),
          "the rate window is empty"
        assert subject.enqueue_recurring("report", 100, "default", job),
          "tick 100 can be claimed again"
      end
    end
  end

  def acquire_rate(fetched, limit:, period:)
    subject.acquire_rate(
      PROCESS,
      fetched,
      key: "RecordJob",
      limit: limit,
      period: period,
      jid: jid_of(fetched.payload),
      reliable: true
    )
  end

  def acquire(fetched, limit:, ttl: 60)
    subject.acquire_slot(
      PROCESS,
      fetched,
      key: "RecordJob",
      limit: limit,
      jid: jid_of(fetched.payload),
      ttl: ttl,
      reliable: true
    )
  end
end

require_relative "store_contract_long_jobs"
require_relative "store_contract_workflows"
require_relative "store_contract_lookups"

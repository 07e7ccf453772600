# frozen_string_literal: true

require_relative "helper"

# Iterable jobs on real servers: after kill -9 the job runs again from its last checkpoint, redoing at most one
# checkpoint's worth of items; TERM stops it between two items and the next server resumes it where it stopped.
module IterationTest
  ITEMS = 100_000
  EVERY = Reliability::CountJob::CHECKPOINT_EVERY

  # Reads the record file as it grows: the items each line names, in order, and the process that did each.
  class ItemLog
    attr_reader :deliveries, :last_item, :last_pid

    def initialize(path)
      @path = path
      @offset = 0
      @partial = +""
      @deliveries = [] # [pid, [items in order]] per run of the job, in order
      @complete = []
    end

    # Reads what was appended since the last call. @returns [ItemLog] self.
    def update
      return self unless File.exist?(@path)
      chunk = File.open(@path) { |file| file.seek(@offset) && file.read }
      @offset += chunk.bytesize
      lines = (@partial + chunk).split("\n", -1)
      @partial = lines.pop || +""
      lines.each { |line| take(line) }
      self
    end

    def completed = @complete

    # How many times each item was done. @returns [Array(Integer)] by item number (index 0 unused).
    def counts
      @deliveries
        .each_with_object(Array.new(ITEMS + 1, 0)) do |(_, items), counts|
          items.each { |item| counts[item] += 1 }
        end
    end

    private

    def take(line)
      value, pid = line.split
      if value.start_with?("complete:")
        @complete << value
        return
      end
      item = Integer(value.delete_prefix("item:"))
      pid = pid.to_i
      if @deliveries.empty? || @deliveries.last.first != pid
        @deliveries << [pid, []]
      end
      @deliveries.last.last << item
      @last_item = item
      @last_pid = pid
    end
  end

  # Items each run did again after the previous one ended (0 for the first), checking that no item was skipped.
  def redone_per_run(log)
    log.deliveries.each_cons(2).map do |(_, before), (_, after)|
      assert_operator after.first, :<=, before.max + 1,
        "a run must not skip items: " \
          "it started at #{after.first} after #{before.max}"
      before.max - after.first + 1
    end
  end
end

StoreTarget.describe_each("iterable jobs") do
  include ReliabilityHelper
  include IterationTest

  it "processes every one of 100,000 items through five kill -9, " \
    "redoing at most one checkpoint's worth each time" do
    started = now
    log = IterationTest::ItemLog.new(@record)
    jid = Reliability::CountJob.enqueue(IterationTest::ITEMS, 20)
    live = [start_reliable("-c", "2", recovery_timeout: 1)]
    # Kill points spread over the count, at random places: one in each fifth, past its first 4,000 items.
    points = Array.new(5) { |index| 4_000 + index * 19_000 + rand(14_000) }
    points.each do |point|
      wait_for(timeout: 30, message: "the count to pass #{point}") do
        (log.update.last_item || 0) >= point
      end
      # the next runner boots meanwhile
      live << start_reliable("-c", "2", recovery_timeout: 1, wait: false)
      runner = live.find { |server| server.pid == log.last_pid } or
        flunk("no live server ran the job")
      runner.signal(:KILL)
      runner.wait
      live.delete(runner)
    end
    wait_for(timeout: 60, message: "the count to complete") do
      log.update.completed.any?
    end
    took = now - started

    counts = log.counts
    missing = (1..IterationTest::ITEMS).reject { |item| counts[item].positive? }
    assert_empty missing.first(10),
      "every item is processed at least once (#{missing.size} missing)"
    redone = redone_per_run(log)
    total_redone = counts.sum - IterationTest::ITEMS
    puts format(
      "\niterable job on %s: %d items, kill -9 at %s: %d runs, " \
        "items redone per run %s, %d in all " \
        "(checkpoint every %d items); %.1f s",
      target_name, IterationTest::ITEMS, points.inspect, log.deliveries.size,
      redone.inspect, total_redone, IterationTest::EVERY, took
    )
    assert_equal 6, log.deliveries.size, "one run per kill, and the last"
    assert_equal total_redone, redone.sum
    redone.each do |count|
      assert_operator count, :<=, IterationTest::EVERY,
        "a run redoes at most one checkpoint's worth"
    end
    assert_operator counts.max, :<=, 2,
      "kills at least #{IterationTest::EVERY} items apart: " \
        "no item is done more than twice"
    assert_equal ["complete:#{jid}"], log.completed
    wait_for(message: "the job's acknowledgement") do
      Jiggler.summary["processed_count"] == 1
    end
    assert_empty set_jobs(:dead),
      "progress clears each death's crash: " \
        "the job is never taken for a poison job"
    assert_empty set_jobs(:retry)
  end

  it "stops between two items at TERM, back in its queue at its cursor " \
    "at once, and the next server resumes it there" do
    log = IterationTest::ItemLog.new(@record)
    jid = Reliability::CountJob.enqueue(20_000, 4)
    server = start_reliable("-c", "2", "-t", "25")
    wait_for(timeout: 20, message: "the count to pass 3,000") do
      (log.update.last_item || 0) >= 3_000
    end
    sent = now
    server.signal(:TERM)
    status = server.wait(timeout: 10)
    stopped_in = now - sent
    assert_equal 0, status, "a clean exit, every job back in its queue"
    assert_operator stopped_in, :<, 5,
      "the job stops between two items, not at the shutdown timeout (25 s)"

    stopped_at = log.update.last_item
    queued = store.queue_entries("default")
      .map { |payload| JSON.parse(payload) }
    assert_equal(
      [[jid, stopped_at, 1, nil]],
      queued.map do |job|
        job.values_at("jid", "cursor", "interruptions", "attempt")
      end,
      "requeued once, at the cursor of the last item done, no attempt counted"
    )
    assert_match(
      /requeued: Reliability::CountJob jid=#{jid} queue=default at cursor #{stopped_at} /,
      server.log
    )
    refute_match(/stopped by the shutdown/, server.log)

    start_reliable("-c", "2")
    wait_for(timeout: 30, message: "the count to complete") do
      log.update.completed.any?
    end
    counts = log.counts
    assert_equal [1] * 20_000, counts[1..20_000],
      "every item done once: the resumed run starts right after the cursor"
    assert_equal 2, log.deliveries.size
    puts format(
      "\niterable job on %s: TERM at item %d, exited in %.2f s, " \
        "resumed at %d, 0 items redone",
      target_name, stopped_at, stopped_in, log.deliveries.last.last.first
    )
  end

  it "is handed to another server when its own is quieted (TSTP), " \
    "where it resumes at its cursor" do
    log = IterationTest::ItemLog.new(@record)
    Reliability::CountJob.enqueue(20_000, 4)
    quiet = start_reliable("-c", "2")
    wait_for(timeout: 20, message: "the count to pass 2,000") do
      (log.update.last_item || 0) >= 2_000
    end
    quiet.signal(:TSTP)
    wait_for(message: "the requeue") do
      quiet.log.include?("requeued: Reliability::CountJob")
    end
    other = start_reliable("-c", "2")
    wait_for(timeout: 30, message: "the count to complete") do
      log.update.completed.any?
    end
    assert_equal [quiet.pid, other.pid], log.deliveries.map(&:first)
    assert_equal [1] * 20_000, log.counts[1..20_000]
    assert quiet.running?, "a quiet process stays up"
  end
end

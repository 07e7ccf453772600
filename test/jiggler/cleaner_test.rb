# frozen_string_literal: true

require "test_helper"
require "json"

class CleanerBatchJob
  include Jiggler::Job

  job_options batch_size: 10

  def perform_batch(args_list) = nil
end

describe Jiggler::Cleaner do
  def cleaner = Jiggler.config.cleaner

  def payload(value)
    JSON.generate(
      {"jid" => SecureRandom.hex(12), "name" => "RecordJob", "args" => [value]}
    )
  end

  # Puts something in every place the cleaner can empty and returns the summary; every value is non-zero.
  def fill
    RecordJob.enqueue_bulk([[1], [2]])
    RecordJob.with_options(queue: "mailers").enqueue(3)
    RecordJob.enqueue_in(60, 4)
    CleanerBatchJob.with_options(queue: "mailers").enqueue(7)
    failures = [[:retry, payload(5)], [:dead, payload(6)]].map do |set, failed|
      Jiggler::Store::Failed.new(
        fetched: Jiggler::Store::Fetched.new(nil, "default", nil),
        set: set,
        at: Time.now.to_f,
        payload: failed
      )
    end
    store.fail(
      "proc-1", failures, reliable: false, dead_cutoff: 0, dead_max: 100
    )
    store.fetch(
      "proc-1",
      [],
      limit: 0,
      acks: %w[1|default 2|default 3|default],
      reliable: false
    )
    store.beat("proc-1", JSON.generate({"pid" => 1}), 60)
    # Jobs waiting for a concurrency slot and recurring tasks are not the cleaner's: they stay empty here.
    Jiggler.summary.tap do |summary|
      assert(
        summary.except("waiting", "recurring").values.all? { |value|
          value != 0 && value != {}
        },
        summary.inspect
      )
    end
  end

  def empty_summary
    {
      "retry_jobs_count" => 0,
      "dead_jobs_count" => 0,
      "scheduled_jobs_count" => 0,
      "failures_count" => 0,
      "processed_count" => 0,
      "processes" => {},
      "queues" => {},
      "batches" => {},
      "waiting" => {},
      "recurring" => {}
    }
  end

  it "prunes one queue by positional name" do
    before = fill
    cleaner.prune_queue("mailers")
    assert_equal before.merge("queues" => {"default" => 2}, "batches" => {}),
      Jiggler.summary
    assert_empty store.queue_entries("mailers")
  end

  it "prunes one queue by queue: keyword" do
    before = fill
    cleaner.prune_queue(queue: "default")
    assert_equal before.merge("queues" => {"mailers" => 1}), Jiggler.summary
    assert_equal 1, store.queue_entries("mailers").size
  end

  it "prunes one queue by name: keyword, as jiggler 0.1.0 documented it" do
    before = fill
    cleaner.prune_queue(name: "mailers")
    assert_equal before.merge("queues" => {"default" => 2}, "batches" => {}),
      Jiggler.summary
    assert_empty store.queue_entries("mailers")
  end

  it "accepts a Symbol queue name and refuses no name" do
    RecordJob.enqueue(1)
    cleaner.prune_queue(:default)
    assert_empty Jiggler.summary["queues"]
    assert_raises(ArgumentError) { cleaner.prune_queue }
    assert_raises(ArgumentError) { cleaner.prune_queue("") }
    assert_raises(ArgumentError) { cleaner.prune_queue(name: nil) }
  end

  it "prunes all queues only" do
    before = fill
    cleaner.prune_all_queues
    assert_equal before.merge("queues" => {}, "batches" => {}), Jiggler.summary
    assert_empty store.queue_entries("default") + store.queue_entries("mailers")
  end

  it "prunes the scheduled set only" do
    before = fill
    cleaner.prune_scheduled_set
    assert_equal before.merge("scheduled_jobs_count" => 0), Jiggler.summary
    assert_empty store.set_entries(:scheduled)
  end

  it "prunes the retry set only" do
    before = fill
    cleaner.prune_retries_set
    assert_equal before.merge("retry_jobs_count" => 0), Jiggler.summary
    assert_empty store.set_entries(:retry)
  end

  it "prunes the dead set only" do
    before = fill
    cleaner.prune_dead_set
    assert_equal before.merge("dead_jobs_count" => 0), Jiggler.summary
    assert_empty store.set_entries(:dead)
  end

  it "resets the processed counter only" do
    before = fill
    cleaner.prune_processed_counter
    assert_equal before.merge("processed_count" => 0), Jiggler.summary
  end

  it "resets the failures counter only" do
    before = fill
    cleaner.prune_failures_counter
    assert_equal before.merge("failures_count" => 0), Jiggler.summary
  end

  it "prunes all processes only" do
    before = fill
    cleaner.prune_all_processes
    assert_equal before.merge("processes" => {}), Jiggler.summary
  end

  it "does not lose the jobs pruned processes held in flight" do
    RecordJob.enqueue_bulk([[1], [2]])
    store.beat("proc-2", JSON.generate({"pid" => 2}), 60)
    store.fetch("proc-2", ["default"], limit: 2, reliable: true)
    cleaner.prune_all_processes
    assert_empty Jiggler.summary["processes"]
    held = store.in_flight_count("proc-2") + store.queue_entries("default").size
    assert_equal 2, held, "jobs in flight vanished with their process"
  end

  it "prunes everything" do
    fill
    store.fetch("proc-1", ["default"], limit: 1, reliable: true)
    cleaner.prune_all
    assert_equal empty_summary, Jiggler.summary
    assert_equal 0, store.in_flight_count("proc-1")
  end

  it "leaves other namespaces and other keys alone" do
    other = Jiggler::Store::Redis.new(
      pool: redis, namespace: "#{@namespace}-tenant"
    )
    other.push("default", [payload(1)])
    other.schedule([[Time.now.to_f + 60, payload(2)]])
    other.beat("tenant-proc", "{}", 60)
    redis.call("SET", "#{@namespace}:unrelated", "keep")
    fill
    cleaner.prune_all
    assert_equal [{"default" => 1}, 1, 1],
      [other.queue_sizes, other.counts[:scheduled], other.processes.size]
    assert_equal "keep", redis.call("GET", "#{@namespace}:unrelated")
    other.clear_all
  end

  it "cleans the store its Config was given, and refuses without one" do
    RecordJob.enqueue(1)
    Jiggler::Config.new(store: -> { store }).cleaner.prune_all_queues
    assert_empty store.queue_sizes
    error = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler::Config.new.cleaner
    end
    assert_match(/no store to clean/, error.message)
  end
end

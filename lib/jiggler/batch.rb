# frozen_string_literal: true

require_relative "payload"
require_relative "job_payload"
require_relative "job_rules"

module Jiggler
  # Batch jobs. Items of a class with `batch_size` are enqueued one at a time like any job, but wait in the store, in
  # one batch per queue and class, instead of a queue. When `batch_size` items wait, or the oldest has waited
  # `batch_interval` seconds, they become one ordinary job whose arguments are the items' argument lists and which
  # `perform_batch` runs: fetched, held in flight, retried and recovered like any job, so a batch is delivered at least
  # once and retried as a whole.
  module Batch
    # What a batch's items become: the batch job's `payload` and `jid` (both nil when no item could be read), and
    # `unreadable`, a list of [item payload, its dead-set payload] for the items that go to the dead set instead.
    Formed = Struct.new(:payload, :jid, :unreadable)

    module_function

    # Builds the job that carries a batch of items.
    # @parameter queue [String]
    # @parameter name [String] the job class's name.
    # @parameter items [Array(String)] the items' payloads, oldest first.
    # @parameter now [Float] epoch seconds.
    # @returns [Formed]
    def build(queue, name, items, now)
      jobs, unreadable = parse(queue, items, now)
      return Formed.new(nil, nil, unreadable) if jobs.empty?
      first = jobs.first
      fields = JobPayload.fields(
        name: name,
        queue: queue,
        retries: first["retries"],
        created_at: first["created_at"],
        retry_queue: first["retry_queue"],
        jids: jobs.map { |item| item["jid"] },
        enqueued_at: now
      )
      job = JobPayload.job(jobs.map { |item| item["args"] }, fields)
      Formed.new(Payload.dump(job), job["jid"], unreadable)
    end

    # Forms the due batches of one queue and class: every full one, then the rest if the oldest item has waited
    # `interval` seconds.
    # @parameter store [Store::Redis | Store::SQLite]
    # @returns [Integer] how many items went into batches.
    def form(store, queue, name, size:, interval:, now: Time.now.to_f)
      total = 0
      loop do
        taken = store.form_batch(
          queue, name, size: size, due_before: now - interval, now: now
        ) { |items| build(queue, name, items, now) }
        total += taken
        return total if taken < size
      end
    end

    # Whether a parsed payload is a batch of items rather than one job.
    def batch?(job) = job["jids"].is_a?(Array)

    # Whether a parsed payload is a scheduled item to put in its batch when due.
    def item?(job) = JobRules.batch_item?(job)

    def parse(queue, items, now)
      jobs = []
      unreadable = []
      items.each do |item|
        jobs << Payload.load(item)
      rescue Payload::MalformedError => error
        unreadable << [item, JobRules.unreadable(item, queue, error, now)]
      end
      [jobs, unreadable]
    end
  end
end

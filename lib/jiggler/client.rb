# frozen_string_literal: true

require "securerandom"
require_relative "payload"
require_relative "job_payload"
require_relative "batch"
require_relative "unique_job"
require_relative "limited_job"

module Jiggler
  # Turns jobs into payloads and writes them to the store: due jobs to their queue (items of a batch class to their
  # batch, which becomes a job as soon as it is full), later ones to the scheduled set; jobs of a unique class each
  # with its lock, in one atomic step.
  class Client
    attr_reader :store

    # @parameter store [Store::Redis | Store::SQLite | Store::Postgres]
    # @parameter middleware [Middleware::Chain] the client middleware every job passes through (the chain itself, so
    #   what is added to it later applies too).
    def initialize(store, middleware: Jiggler.config.client_middleware)
      @store = store
      @middleware = middleware
    end

    # Writes jobs of one class, one per argument list, in one go.
    # @parameter name [String] the job class's name.
    # @parameter args_list [Array(Array)] JSON-native arguments, already checked.
    # @parameter options [Hash] queue:, retries:, retry_queue:, timeout:, batch_size: and batch_interval: for batch
    #   items, unique:, concurrency: and rate: (flow control).
    # @parameter at [Float | Nil] epoch seconds to run at; nil or past means now.
    # @returns [Array(String | Nil)] the job ids; nil for a unique job whose lock was taken.
    def push(name, args_list, options, at: nil)
      # Jobs built as Hashes: for the middleware, for the locks of unique jobs and the keys of limited ones.
      unless @middleware.empty? && plain?(options)
        return push_jobs(build(name, args_list, options, at), batch: options)
      end
      now = Time.now.to_f
      scheduled = at && at > now
      jids = job_ids(args_list.size)
      payloads = JobPayload.dump_all(
        jids,
        args_list,
        shared_fields(
          name, options, now, scheduled, enqueued_at: (now unless scheduled)
        )
      )
      if scheduled
        @store.schedule(payloads.map { |payload| [at, payload] })
      elsif options[:batch_size]
        add_to_batch(name, payloads, options, now)
      else
        @store.push(options[:queue], payloads)
      end
      jids
    end

    # Writes jobs given as payload Hashes, each passed through the client middleware first.
    # @parameter jobs [Array(Hash)] "jid", "name", "args", "queue", "retries" and any other fields, with "at" (epoch
    #   seconds) for a job to run later.
    # @parameter batch [Hash | Nil] the options of the class the jobs are of (batch_size: and batch_interval: of a batch
    #   class, unique:).
    # @returns [Array(String | Nil)] the ids, nil for each job a middleware stopped or whose unique lock was taken.
    def push_jobs(jobs, batch: nil)
      passed = @middleware.empty? ?
        jobs :
        jobs.select { |job| passes?(@middleware, job) }
      written = write(passed, batch).to_h { |jid| [jid, jid] }
      jobs.map { |job| written[job["jid"]] }
    end

    # The payload Hashes `push` writes, one per argument list, with "at" when they run later.
    # @returns [Array(Hash)]
    def build(name, args_list, options, at)
      now = Time.now.to_f
      scheduled = at && at > now
      at = nil unless scheduled
      limited = options[:concurrency] || options[:rate]
      shared = shared_fields(name, options, now, scheduled, at: at)
      job_ids(args_list.size).each_with_index.map do |jid, index|
        args = args_list[index]
        # "limits" is each job's own, computed from its arguments.
        fields = limited ?
          shared_fields(
            name,
            options,
            now,
            scheduled,
            at: at,
            limits: LimitedJob.field(name, args, options)
          ) :
          shared
        JobPayload.job(args, fields, jid: jid)
      end
    end

    private

    # Whether a class's jobs need nothing but their payloads (no lock, no limit keys).
    def plain?(options)
      !(options[:unique] || options[:concurrency] || options[:rate])
    end

    # Whether the middleware let the job through (reached the end of the chain).
    def passes?(middleware, job)
      reached = false
      middleware.invoke(job, job["queue"]) { reached = true }
      reached
    end

    # @returns [Array(String | Nil)] the ids written (nil where a unique job's lock was taken).
    def write(jobs, batch)
      return UniqueJob.write(@store, jobs, batch) if batch&.dig(:unique)
      now = Time.now.to_f
      later, due = jobs.partition { |job| job["at"] && job["at"] > now }
      if later.any?
        @store.schedule(
          later.map { |job| [job["at"], Payload.dump(job.except("at"))] }
        )
      end
      due.group_by { |job| [batch && job["name"], job["queue"]] }
        .each do |(name, queue), list|
        payloads = list.map do |job|
          Payload.dump(JobPayload.enqueued(job, now))
        end
        batch&.dig(:batch_size) ?
          add_to_batch(name, payloads, batch.merge(queue: queue), now) :
          @store.push(queue, payloads)
      end
      jobs.map { |job| job["jid"] }
    end

    def add_to_batch(name, payloads, options, now)
      size = options[:batch_size]
      return if @store.add_to_batch(options[:queue], name, payloads, now) < size
      Batch.form(
        @store,
        options[:queue],
        name,
        size: size,
        interval: options[:batch_interval],
        now: now
      )
    end

    # Unique ids, 24 hex digits each: 16 random ones shared by the call, then a counter.
    def job_ids(count)
      prefix = SecureRandom.hex(8)
      Array.new(count) { |index| prefix + index.to_s(16).rjust(8, "0") }
    end

    # The fields every job of one call shares, from its class's options. A scheduled item of a batch class is
    # marked, so that the scheduler puts it in its batch when it is due.
    def shared_fields(
      name, options, now, scheduled, enqueued_at: nil, at: nil, limits: nil
    )
      JobPayload.fields(
        name: name,
        queue: options[:queue],
        retries: options[:retries],
        created_at: now,
        retry_queue: options[:retry_queue],
        timeout: options[:timeout],
        batch_item: (true if scheduled && options[:batch_size]),
        limits: limits,
        enqueued_at: enqueued_at,
        at: at
      )
    end
  end
end

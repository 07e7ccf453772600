# frozen_string_literal: true

require "securerandom"
require_relative "payload"
require_relative "batch"

module Jiggler
  # Turns jobs into payloads and writes them to the store: due jobs to their queue (items of a batch class to their
  # batch, which becomes a job as soon as it is full), later ones to the scheduled set.
  class Client
    attr_reader :store

    # @parameter store [Store::Redis | Store::SQLite]
    def initialize(store)
      @store = store
    end

    # Writes jobs of one class, one per argument list, in one go.
    # @parameter name [String] the job class's name.
    # @parameter args_list [Array(Array)] JSON-native arguments, already checked.
    # @parameter options [Hash] queue:, retries:, retry_queue:, and batch_size: and batch_interval: for batch items.
    # @parameter at [Float | Nil] epoch seconds to run at; nil or past means now.
    # @returns [Array(String)] the job ids.
    def push(name, args_list, options, at: nil)
      middleware = Jiggler.config.client_middleware
      return push_jobs(build(name, args_list, options, at), batch: options) unless middleware.empty?
      now = Time.now.to_f
      scheduled = at && at > now
      jids = job_ids(args_list.size)
      shared = shared_fields(name, options, now, scheduled)
      payloads = args_list.each_with_index.map { |args, index| %({"jid":"#{jids[index]}","args":#{Payload.dump(args)},#{shared}) }
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
    # @parameter batch [Hash | Nil] the options of a batch class (batch_size:, batch_interval:) the jobs are items of.
    # @returns [Array(String | Nil)] the ids, nil for each job a middleware stopped.
    def push_jobs(jobs, batch: nil)
      middleware = Jiggler.config.client_middleware
      jids = jobs.map { |job| (middleware.empty? || passes?(middleware, job)) ? job["jid"] : nil }
      write(jobs.select.with_index { |_, index| jids[index] }, batch)
      jids
    end

    # The payload Hashes `push` writes, one per argument list, with "at" when they run later.
    # @returns [Array(Hash)]
    def build(name, args_list, options, at)
      now = Time.now.to_f
      scheduled = at && at > now
      job_ids(args_list.size).each_with_index.map do |jid, index|
        job = {"jid" => jid, "args" => args_list[index], "name" => name, "queue" => options[:queue],
               "retries" => options[:retries], "created_at" => now}
        job["retry_queue"] = options[:retry_queue] if options[:retry_queue]
        job[Batch::ITEM] = true if scheduled && options[:batch_size]
        job["at"] = at if scheduled
        job
      end
    end

    private

    # Whether the middleware let the job through (reached the end of the chain).
    def passes?(middleware, job)
      reached = false
      middleware.invoke(job, job["queue"]) { reached = true }
      reached
    end

    def write(jobs, batch)
      now = Time.now.to_f
      later, due = jobs.partition { |job| job["at"] && job["at"] > now }
      @store.schedule(later.map { |job| [job.delete("at"), Payload.dump(job)] }) if later.any?
      due.group_by { |job| [batch && job["name"], job["queue"]] }.each do |(name, queue), list|
        payloads = list.map { |job| Payload.dump(job.except("at").merge("enqueued_at" => now)) }
        batch&.dig(:batch_size) ? add_to_batch(name, payloads, batch.merge(queue: queue), now) : @store.push(queue, payloads)
      end
    end

    def add_to_batch(name, payloads, options, now)
      size = options[:batch_size]
      return if @store.add_to_batch(options[:queue], name, payloads, now) < size
      Batch.form(@store, options[:queue], name, size: size, interval: options[:batch_interval], now: now)
    end

    # Unique ids, 24 hex digits each: 16 random ones shared by the call, then a counter.
    def job_ids(count)
      prefix = SecureRandom.hex(8)
      Array.new(count) { |index| prefix + index.to_s(16).rjust(8, "0") }
    end

    # The JSON of the fields every job of one call shares, without its opening brace, to follow jid and args. A
    # scheduled item of a batch class is marked, so that the scheduler puts it in its batch when it is due.
    def shared_fields(name, options, now, scheduled)
      fields = {"name" => name, "queue" => options[:queue], "retries" => options[:retries], "created_at" => now}
      fields["retry_queue"] = options[:retry_queue] if options[:retry_queue]
      fields[Batch::ITEM] = true if scheduled && options[:batch_size]
      fields["enqueued_at"] = now unless scheduled
      Payload.dump(fields).delete_prefix("{")
    end
  end
end

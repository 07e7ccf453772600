# frozen_string_literal: true

require "securerandom"
require_relative "payload"
require_relative "batch"
require_relative "unique_job"
require_relative "limited_job"

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
    # @returns [Array(String | Nil)] the job ids; nil for a unique job whose lock was taken.
    def push(name, args_list, options, at: nil)
      now = Time.now.to_f
      scheduled = at && at > now
      return UniqueJob.push(@store, fields(name, options, now, scheduled), args_list, options, (at if scheduled)) if options[:unique]
      return push_limited(name, args_list, options, now, at, scheduled) if options[:concurrency] || options[:rate]
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

    private

    # Jobs of a class with a concurrency or rate limit carry their keys, computed from each one's arguments.
    def push_limited(name, args_list, options, now, at, scheduled)
      shared = fields(name, options, now, scheduled)
      jids = job_ids(args_list.size)
      payloads = args_list.each_with_index.map do |args, index|
        Payload.dump({"jid" => jids[index], "args" => args, **shared, "limits" => LimitedJob.field(name, args, options)})
      end
      scheduled ? @store.schedule(payloads.map { |payload| [at, payload] }) : @store.push(options[:queue], payloads)
      jids
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
    def shared_fields(name, options, now, scheduled) = Payload.dump(fields(name, options, now, scheduled)).delete_prefix("{")

    def fields(name, options, now, scheduled)
      fields = {"name" => name, "queue" => options[:queue], "retries" => options[:retries], "created_at" => now}
      fields["retry_queue"] = options[:retry_queue] if options[:retry_queue]
      fields[Batch::ITEM] = true if scheduled && options[:batch_size]
      fields["enqueued_at"] = now unless scheduled
      fields
    end
  end
end

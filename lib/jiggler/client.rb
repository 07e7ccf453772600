# frozen_string_literal: true

require "securerandom"
require_relative "payload"

module Jiggler
  # Turns jobs into payloads and writes them to the store: due jobs to their queue, later ones to the scheduled set.
  class Client
    attr_reader :store

    # @parameter store [Store::Redis | Store::SQLite]
    def initialize(store)
      @store = store
    end

    # Writes jobs of one class, one per argument list, in one go.
    # @parameter name [String] the job class's name.
    # @parameter args_list [Array(Array)] JSON-native arguments, already checked.
    # @parameter options [Hash] queue:, retries: and retry_queue:.
    # @parameter at [Float | Nil] epoch seconds to run at; nil or past means now.
    # @returns [Array(String)] the job ids.
    def push(name, args_list, options, at: nil)
      now = Time.now.to_f
      scheduled = at && at > now
      jids = job_ids(args_list.size)
      shared = shared_fields(name, options, now, scheduled)
      payloads = args_list.each_with_index.map { |args, index| %({"jid":"#{jids[index]}","args":#{Payload.dump(args)},#{shared}) }
      scheduled ? @store.schedule(payloads.map { |payload| [at, payload] }) : @store.push(options[:queue], payloads)
      jids
    end

    private

    # Unique ids, 24 hex digits each: 16 random ones shared by the call, then a counter.
    def job_ids(count)
      prefix = SecureRandom.hex(8)
      Array.new(count) { |index| format("%s%08x", prefix, index) }
    end

    # The JSON of the fields every job of one call shares, without its opening brace, to follow jid and args.
    def shared_fields(name, options, now, scheduled)
      fields = {"name" => name, "queue" => options[:queue], "retries" => options[:retries], "created_at" => now}
      fields["retry_queue"] = options[:retry_queue] if options[:retry_queue]
      fields["enqueued_at"] = now unless scheduled
      Payload.dump(fields).delete_prefix("{")
    end
  end
end

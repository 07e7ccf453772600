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
      jobs = args_list.map { |args| payload(name, args, options, now, scheduled) }
      if scheduled
        @store.schedule(jobs.map { |job| [at, Payload.dump(job)] })
      else
        @store.push(options[:queue], jobs.map { |job| Payload.dump(job) })
      end
      jobs.map { |job| job["jid"] }
    end

    private

    def payload(name, args, options, now, scheduled)
      job = {"jid" => SecureRandom.hex(12), "name" => name, "args" => args, "queue" => options[:queue],
             "retries" => options[:retries], "created_at" => now}
      job["retry_queue"] = options[:retry_queue] if options[:retry_queue]
      job["enqueued_at"] = now unless scheduled
      job
    end
  end
end

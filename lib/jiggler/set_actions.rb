# frozen_string_literal: true

require_relative "job_rules"
require_relative "unique_job"
require_relative "payload"

module Jiggler
  # The actions on entries of the scheduled, retry and dead sets, shared by the dashboard's buttons and the admin
  # commands: where a job goes is JobRules' decision, and a unique job killed or deleted gives its lock back.
  # Entries are [score, jid] pairs, as the stores' admin methods take them.
  module SetActions
    # Entries acted on at once by a sweep.
    PAGE = 500

    module_function

    # Moves entries to their queues now, where JobRules.due sends them. @returns [Integer] how many moved.
    def run(store, set, entries, now: Time.now.to_f)
      store.enqueue_set_entries(set, entries, now: now) do |from, payload|
        JobRules.due(from, payload, now)
      end
    end

    # Moves entries to the dead set, stamped by JobRules.killed. @returns [Integer] how many moved.
    # @parameter payloads [Array(String) | Nil] the entries' payloads when the caller has read them already.
    def kill(store, set, entries, now: Time.now.to_f, payloads: nil)
      UniqueJob.released(store, payloads || payloads(store, set, entries)) do
        store.kill_set_entries(set, entries, now: now) do |payload|
          JobRules.killed(payload, now)
        end
      end
    end

    # Deletes entries. @returns [Integer] how many were deleted.
    # @parameter payloads [Array(String) | Nil] the entries' payloads when the caller has read them already.
    def delete(store, set, entries, payloads: nil)
      UniqueJob.released(store, payloads || payloads(store, set, entries)) do
        store.delete_set_entries(set, entries)
      end
    end

    # Applies one action to every job of a set, or to the jobs of one class, as the set was when the sweep began: it
    # reads the set once, soonest first, then acts a page at a time, so a job that comes back meanwhile (retried, then
    # dead again while a server runs) is not acted on twice, and the work grows with the set's size alone. Deleting a
    # whole set clears it (the unique jobs' locks released with it). The dashboard's "all" buttons and the `retry`,
    # `kill` and `delete` commands run this.
    # @parameter action [Symbol] :run, :kill or :delete.
    # @parameter name [String | Nil] only jobs whose class is exactly this; nil for all.
    # @returns [Integer] how many jobs it was applied to.
    def sweep(store, set, action, name: nil)
      return store.clear_set(set) if action == :delete && name.nil?
      matching(store, set, name).each_slice(PAGE).sum do |page|
        entries = page.map(&:first)
        next run(store, set, entries) if action == :run
        public_send(action, store, set, entries, payloads: page.map(&:last))
      end
    end

    # The payloads of entries, as they are before an action changes them.
    def payloads(store, set, entries)
      entries.filter_map { |score, jid| store.set_entry(set, score, jid) }
    end

    # The entries of a set whose class is `name` (any class for nil), each with its payload.
    # @returns [Array([[Float, String], String])]
    def matching(store, set, name)
      store.each_set_entry(set).filter_map do |payload, score|
        job = Payload.load(payload)
        [[score, job["jid"]], payload] if name.nil? || job["name"] == name
      rescue Payload::MalformedError
        nil # not a job: no action applies to it
      end
    end
    private_class_method :matching
  end
end

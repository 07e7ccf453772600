# frozen_string_literal: true

require_relative "job_rules"
require_relative "unique_job"

module Jiggler
  # The actions on entries of the scheduled, retry and dead sets, shared by the dashboard's buttons and the admin
  # commands: where a job goes is JobRules' decision, and a unique job killed or deleted gives its lock back.
  # Entries are [score, jid] pairs, as the stores' admin methods take them.
  module SetActions
    module_function

    # Moves entries to their queues now, where JobRules.due sends them. @returns [Integer] how many moved.
    def run(store, set, entries, now: Time.now.to_f)
      store.enqueue_set_entries(set, entries, now: now) { |from, payload| JobRules.due(from, payload, now) }
    end

    # Moves entries to the dead set, stamped by JobRules.killed. @returns [Integer] how many moved.
    def kill(store, set, entries, now: Time.now.to_f)
      UniqueJob.released(store, payloads(store, set, entries)) do
        store.kill_set_entries(set, entries, now: now) { |payload| JobRules.killed(payload, now) }
      end
    end

    # Deletes entries. @returns [Integer] how many were deleted.
    def delete(store, set, entries)
      UniqueJob.released(store, payloads(store, set, entries)) { store.delete_set_entries(set, entries) }
    end

    # The payloads of entries, as they are before an action changes them.
    def payloads(store, set, entries) = entries.filter_map { |score, jid| store.set_entry(set, score, jid) }
  end
end

# frozen_string_literal: true

require_relative "payload"
require_relative "store/contract"
require_relative "job_status/waiting"

module Jiggler
  # Where a job is now (`Jiggler.status`), read through the store's admin reads, in the order a job moves: running on
  # a live process (with the progress it reported), then the scheduled, retry and dead sets (a cancelled job is in
  # the dead set, marked; a job its rate limit deferred is scheduled, and "waiting" for the rate), then where a job
  # waits outside the queues (for a concurrency slot, in a batch not formed yet, as a workflow step held for its
  # dependencies: Waiting), then the queues, then what a finished job leaves (its result, with `result_ttl`; its
  # history, on SQLite). Each place is looked in before the places a job leaves it for, so a job that moves while
  # it is looked for may be found where it was or where it went, never nowhere unless it finished: jiggler keeps
  # nothing of a finished job without a result, so "unknown" means finished or never enqueued.
  module JobStatus
    SETS = {scheduled: "scheduled", retry: "retry", dead: "dead"}.freeze
    # Entries read per call while looking through a queue.
    PAGE = 1_000

    module_function

    # @parameter store [Object] a store.
    # @parameter jid [String]
    # @returns [Hash] "state" ("running", "scheduled", "retry", "dead", "cancelled", "waiting", "batched", "queued",
    #   "done", "failed" or "unknown") and what goes with it: "queue", "class", "at" (when it runs, or died),
    #   "progress", "process", "error_class", "error_message", "by" (who cancelled it), "position"; for "waiting",
    #   "for" ("concurrency" or "rate", with the limit's "key"; "dependencies", with the "workflow" and how many
    #   "dependencies" are left); for "batched", the "batch"; "workflow" for any step of a workflow.
    def lookup(store, jid)
      unless jid.is_a?(String) && !jid.empty?
        raise ArgumentError, "status needs a job id String (got #{jid.inspect})"
      end
      running(store, jid) ||
        in_set(store, jid) ||
        Waiting.lookup(store, jid) ||
        queued(store, jid) ||
        finished(store, jid) ||
        {"state" => "unknown"}
    end

    def running(store, jid)
      store.processes.each do |process, json|
        info = parse(json) or next
        jobs = info["current_jobs"]
        next unless jobs.is_a?(Hash)
        work = jobs.each_value.find { |summary|
          summary.is_a?(Hash) && summary["jid"] == jid
        } or next
        return {
          "state" => "running",
          "queue" => work["queue"],
          "class" => work["class"],
          "process" => process,
          "progress" => work["progress"]
        }.compact
      end
      nil
    end

    def in_set(store, jid)
      SETS.each do |set, state|
        payload, at = store.set_entries(set, limit: 10, filter: jid)
          .find { |entry, _| parse(entry)&.dig("jid") == jid }
        next unless payload
        job = parse(payload)
        found = described(state, payload).merge("at" => at)
        if set == :scheduled
          return found.merge(Waiting.for_rate(store, jid, job) || {})
        end
        unless set == :dead && job["cancelled"].is_a?(Hash)
          return found.merge(failure(job))
        end
        return found.merge(
          "state" => "cancelled", "by" => job["cancelled"]["by"]
        )
      end
      nil
    end

    def queued(store, jid)
      store.queue_sizes.each_key do |queue|
        (0..).step(PAGE) do |offset|
          page = store.queue_entries(queue, limit: PAGE, offset: offset)
          index = page.index do |payload|
            payload.include?(jid) && parse(payload)&.dig("jid") == jid
          end
          if index
            return described("queued", page[index]).merge(
              "queue" => queue, "position" => offset + index
            )
          end
          break if page.size < PAGE
        end
      end
      nil
    end

    def finished(store, jid)
      result = parse(store.result(jid))
      if result&.key?("error_class")
        return {"state" => "failed"}.merge(failure(result))
      end
      return {"state" => "done"} if result
      return unless Store::Contract.supports?(store, :history)
      if store.history(jid).last&.last&.dig("type") == "done"
        {"state" => "done"}
      end
    end

    # A status: its state first, then what the payload says of its job: its class, queue and workflow (those it has).
    # @returns [Hash]
    def described(state, payload)
      job = parse(payload) || {}
      {
        "state" => state,
        "queue" => job["queue"],
        "class" => job["name"],
        "workflow" => job["workflow"]
      }.compact
    end

    def failure(job) = job.slice("error_class", "error_message")

    def parse(json)
      value = json && Payload.parse(json)
      value.is_a?(Hash) ? value : nil
    rescue Payload::MalformedError
      nil
    end
  end
end

# frozen_string_literal: true

require_relative "payload"
require_relative "unique_job"
require_relative "store/fetched"
require_relative "store/failed"

module Jiggler
  # Cancels a job wherever it is (Jiggler.cancel, the dashboard's Cancel, `jiggler cancel`). The request is recorded
  # and announced first, so that whichever process runs the job stops it at its next I/O, and a job fetched while
  # this looks for it is cancelled when it starts. Then a job waiting (scheduled, retrying or queued) is taken out:
  # it ends in the dead set marked `"cancelled" => {"by", "at"}`, as a running job does, neither retried nor counted
  # as a failure, and a unique job's lock is released.
  #
  # Finding a queued job reads its queues a page at a time (an admin action, not a server's path); a job taken from
  # a queue is deleted, then written to the dead set: a crash between the two loses a job that was being cancelled.
  module Cancellation
    # Queue entries read per page while looking for a queued job.
    PAGE = 1_000

    module_function

    # @parameter store [Store::Redis | Store::SQLite]
    # @parameter jid [String]
    # @parameter by [String] who cancels, recorded on the job.
    # @parameter config [Config] the dead set's limits.
    # @returns [Symbol] :removed when the job was waiting (now cancelled), :requested otherwise: the process that
    #   runs it, if one does, stops it.
    def cancel(store, jid, by:, config: Jiggler.config, now: Time.now.to_f)
      raise ArgumentError, "cancel takes a job id (got #{jid.inspect})" unless jid.is_a?(String) && !jid.empty?
      store.request_cancel(jid, by.to_s, now)
      mark = ->(payload) { marked(payload, by.to_s, now) }
      removed = %i[scheduled retry].any? { |set| from_set(store, set, jid, now, mark) }
      removed ||= from_queues(store, jid, config, now, mark)
      removed ? :removed : :requested
    end

    # The payload with the cancel recorded on it.
    def marked(payload, by, now)
      job = Payload.load(payload)
      Payload.dump(job.merge("cancelled" => {"by" => by, "at" => now}))
    rescue Payload::MalformedError
      payload
    end

    def from_set(store, set, jid, now, mark)
      entry = store.set_entries(set, limit: 50, filter: jid).find { |payload, _| jid_of(payload) == jid } or return false
      payload, score = entry
      UniqueJob.released(store, [payload]) do
        store.kill_set_entries(set, [[score, jid]], now: now) { |stored| mark.call(stored) }
      end.positive?
    end

    def from_queues(store, jid, config, now, mark)
      store.queue_sizes.each_key.any? do |queue|
        payload = find_queued(store, queue, jid) or next false
        next false unless UniqueJob.released(store, [payload]) { store.delete_queue_entry(queue, payload) }
        failed = Store::Failed.new(fetched: Store::Fetched.new(nil, queue, payload), set: :cancelled, at: now, payload: mark.call(payload))
        store.fail("cancel", [failed], reliable: false, dead_cutoff: now - config[:dead_timeout], dead_max: config[:dead_max_jobs])
        true
      end
    end

    def find_queued(store, queue, jid)
      offset = 0
      loop do
        page = store.queue_entries(queue, limit: PAGE, offset: offset)
        found = page.find { |payload| payload.include?(jid) && jid_of(payload) == jid }
        return found if found || page.size < PAGE
        offset += PAGE
      end
    end

    def jid_of(payload)
      job = Payload.parse(payload)
      job["jid"] if job.is_a?(Hash)
    rescue Payload::MalformedError
      nil
    end
    private_class_method :from_set, :from_queues, :find_queued, :jid_of
  end
end

# frozen_string_literal: true

require_relative "payload"
require_relative "job_payload"
require_relative "limited_job"
require_relative "store/connection_error"

module Jiggler
  # Cancels a job wherever it is (Jiggler.cancel, the dashboard's Cancel, `jiggler cancel`). The request is recorded
  # and announced first, so that whichever process runs the job stops it at its next I/O, and a job fetched while
  # this looks for it is cancelled when it starts. Then a job that waits (queued, scheduled, retrying, a batch item,
  # or waiting for a concurrency slot) is moved by the store, in one atomic step, to the dead set marked
  # `"cancelled" => {"by", "at"}`, as a running job is (Server::Failure.cancel): neither retried nor counted as a
  # failure, its unique lock and its concurrency slot released. A job is either taken out waiting or fetched to run,
  # never both, never lost.
  module Cancellation
    module_function

    # @parameter store [Store::Redis | Store::SQLite | Store::Postgres]
    # @parameter jid [String]
    # @parameter by [String] who cancels, recorded on the job.
    # @parameter config [Config] the dead set's limits.
    # @returns [Symbol] :removed when the job was waiting (now cancelled), :requested otherwise: the process that
    #   runs it, if one does, stops it.
    def cancel(store, jid, by:, config: Jiggler.config, now: Time.now.to_f)
      unless jid.is_a?(String) && !jid.empty?
        raise ArgumentError, "cancel takes a job id (got #{jid.inspect})"
      end
      store.request_cancel(jid, by.to_s, now)
      taken = nil
      removed = store.cancel_waiting(
        jid,
        now: now,
        dead_cutoff: now - config[:dead_timeout],
        dead_max: config[:dead_max_jobs]
      ) do |payload|
        taken = payload
        marked(payload, by.to_s, now)
      end
      return :requested unless removed
      free_slot(store, taken)
      :removed
    end

    # Frees the concurrency slot a queued job may hold (one reserved for it when it left its key's waiting list), as
    # the server frees a cancelled running job's: else the key stays full until the slot's ttl. A second step: cut
    # before it, the job is cancelled all the same and the ttl frees the slot.
    def free_slot(store, payload)
      job = Payload.load(payload)
      LimitedJob.release(store, job) if job.is_a?(Hash) && job["limits"]
    rescue Payload::MalformedError, Store::ConnectionError
      nil
    end

    # The payload with the cancel recorded on it, as Server::Failure.cancel records it on a running job.
    def marked(payload, by, now)
      Payload.dump(JobPayload.cancelled(Payload.load(payload), by, now))
    rescue Payload::MalformedError
      payload
    end
  end
end

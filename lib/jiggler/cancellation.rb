# frozen_string_literal: true

require_relative "payload"

module Jiggler
  # Cancels a job wherever it is (Jiggler.cancel, the dashboard's Cancel, `jiggler cancel`). The request is recorded
  # and announced first, so that whichever process runs the job stops it at its next I/O, and a job fetched while
  # this looks for it is cancelled when it starts. Then a job that waits (queued, scheduled, retrying, a batch item,
  # or waiting for a concurrency slot) is moved by the store, in one atomic step, to the dead set marked
  # `"cancelled" => {"by", "at"}`, as a running job is (Server::Failure.cancel): neither retried nor counted as a
  # failure, its unique lock released. A job is either taken out waiting or fetched to run, never both, never lost.
  module Cancellation
    module_function

    # @parameter store [Store::Redis | Store::SQLite | Store::Postgres]
    # @parameter jid [String]
    # @parameter by [String] who cancels, recorded on the job.
    # @parameter config [Config] the dead set's limits.
    # @returns [Symbol] :removed when the job was waiting (now cancelled), :requested otherwise: the process that
    #   runs it, if one does, stops it.
    def cancel(store, jid, by:, config: Jiggler.config, now: Time.now.to_f)
      raise ArgumentError, "cancel takes a job id (got #{jid.inspect})" unless jid.is_a?(String) && !jid.empty?
      store.request_cancel(jid, by.to_s, now)
      removed = store.cancel_waiting(jid, now: now, dead_cutoff: now - config[:dead_timeout], dead_max: config[:dead_max_jobs]) do |payload|
        marked(payload, by.to_s, now)
      end
      removed ? :removed : :requested
    end

    # The payload with the cancel recorded on it, as Server::Failure.cancel records it on a running job.
    def marked(payload, by, now)
      job = Payload.load(payload)
      Payload.dump(job.merge("cancelled" => {"by" => by, "at" => now}))
    rescue Payload::MalformedError
      payload
    end
  end
end

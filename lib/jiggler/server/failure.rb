# frozen_string_literal: true

require_relative "../error"
require_relative "../payload"
require_relative "../job_rules"
require_relative "../job_payload"
require_relative "../store/failed"

module Jiggler
  module Server
    # Decides where a failed job goes: back to the retry set with a growing, jittered delay while it has retries
    # left, else to the dead set. Records the error on the payload (JobPayload.failed).
    module Failure
      DEFAULT_RETRIES = 25
      DELAY_ATTEMPTS = 100

      module_function

      # @parameter fetched [Store::Fetched] the job as it was fetched.
      # @parameter job [Hash] the parsed payload; replaced by the one written, whose failure (and death) the
      #   processor's log and handlers read.
      # @parameter error [Exception]
      # @parameter now [Float] epoch seconds.
      # @returns [Store::Failed] as Store#fail takes it.
      def record(fetched, job, error, now)
        attempt = JobPayload.count(job["attempt"]) + 1
        # It failed running alone without killing its process: cleared of suspicion.
        job.replace(
          JobPayload.cleared(JobPayload.failed(job, error, attempt, now))
        )
        return dead(fetched, job, now) if attempt > retries(job, error)
        Store::Failed.new(
          fetched: fetched,
          set: :retry,
          at: now + delay(attempt),
          payload: Payload.dump(job)
        )
      end

      # The record for a job sent straight to the dead set, whatever its retries; `job` is replaced as by `record`.
      def kill(fetched, job, error, now)
        dead(
          fetched,
          job.replace(
            JobPayload.failed(
              job, error, JobPayload.count(job["attempt"]), now
            )
          ),
          now
        )
      end

      # The record for a cancelled job (Jiggler.cancel): to the dead set, marked with who cancelled it and when; not a
      # failure, and not a death (no death handler runs).
      def cancel(fetched, job, by, now)
        Store::Failed.new(
          fetched: fetched,
          set: :cancelled,
          at: now,
          payload: Payload.dump(JobPayload.cancelled(job, by, now))
        )
      end

      # The record for a job that snoozed (Job#snooze): to the scheduled set, due in `seconds`, its attempt count
      # unchanged; its snoozes are counted on it.
      def snooze(fetched, job, seconds, now)
        Store::Failed.new(
          fetched: fetched,
          set: :scheduled,
          at: now + seconds,
          payload: Payload.dump(JobPayload.snoozed(job))
        )
      end

      # The record for a payload that cannot be read at all: straight to the dead set, kept as it was.
      def malformed(fetched, error, now)
        Store::Failed.new(
          fetched: fetched,
          set: :dead,
          at: now,
          payload: JobRules.unreadable(
            fetched.payload, fetched.queue, error, now
          )
        )
      end

      # Seconds before retry number `attempt` (1-based): attempt**4 + 15 plus up to 10 * attempt of jitter, so that
      # jobs failing together do not all come back together. Attempts past DELAY_ATTEMPTS (a payload's attempt field
      # may hold any number) wait as long as that one, about three years: a larger count would make the retry's score
      # Infinity, and the job would never be due.
      def delay(attempt)
        count = attempt.clamp(1, DELAY_ATTEMPTS) - 1
        count**4 + 15 + rand(10 * (count + 1))
      end

      def retries(job, error)
        retries =
          job["retries"].is_a?(Integer) ? job["retries"] : DEFAULT_RETRIES
        error.is_a?(UnknownJobError::NotLoaded) ?
          [retries, DEFAULT_RETRIES].max :
          retries
      end

      def dead(fetched, job, now)
        Store::Failed.new(
          fetched: fetched,
          set: :dead,
          at: now,
          payload: Payload.dump(job.replace(JobPayload.died(job, now)))
        )
      end
    end
  end
end

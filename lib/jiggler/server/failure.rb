# frozen_string_literal: true

require "securerandom"
require_relative "../payload"

module Jiggler
  module Server
    # Decides where a failed job goes: back to the retry set with a growing, jittered delay while it has retries
    # left, else to the dead set. Records the error on the payload.
    module Failure
      BACKTRACE_LINES = 20
      MESSAGE_LIMIT = 2_000
      DEFAULT_RETRIES = 25
      DELAY_ATTEMPTS = 100

      module_function

      # @parameter field [String] the job's in-flight field.
      # @parameter job [Hash] the parsed payload; changed in place.
      # @parameter error [Exception]
      # @parameter now [Float] epoch seconds.
      # @returns [Array] in-flight field, "retry" or "dead", score and payload, as Store#fail takes them.
      def record(field, job, error, now)
        attempt = count(job["attempt"]) + 1
        describe(job, error, attempt, now)
        retries = job["retries"].is_a?(Integer) ? job["retries"] : DEFAULT_RETRIES
        return dead(field, job, now) if attempt > retries
        [field, "retry", now + delay(attempt), Payload.dump(job)]
      end

      # The record for a job sent straight to the dead set, whatever its retries.
      def kill(field, job, error, now)
        describe(job, error, count(job["attempt"]), now)
        dead(field, job, now)
      end

      # The record for a payload that cannot be read at all: straight to the dead set, kept as it was.
      def malformed(fetched, error, now)
        job = {"jid" => SecureRandom.hex(12), "name" => "(unreadable)", "args" => [], "queue" => fetched.queue,
               "raw" => utf8(fetched.payload)}
        describe(job, error, 1, now)
        dead(fetched.field, job, now)
      end

      # Seconds before retry number `attempt` (1-based): attempt**4 + 15 plus up to 10 * attempt of jitter, so that
      # jobs failing together do not all come back together. Attempts past DELAY_ATTEMPTS (a payload's attempt field
      # may hold any number) wait as long as that one, about three years: a larger count would make the retry's score
      # Infinity, and the job would never be due.
      def delay(attempt)
        count = attempt.clamp(1, DELAY_ATTEMPTS) - 1
        count**4 + 15 + rand(10 * (count + 1))
      end

      def describe(job, error, attempt, now)
        job["attempt"] = attempt
        job["error_class"] = error.class.name
        job["error_message"] = utf8(message(error))[0, MESSAGE_LIMIT]
        job["error_backtrace"] = (error.backtrace || []).first(BACKTRACE_LINES).map { |line| utf8(line) }
        job["failed_at"] ||= now
        job["retried_at"] = now if attempt > 1
      end

      # A counter field of a payload; anything but an Integer (a hand-edited or foreign payload) counts as 0.
      def count(value) = value.is_a?(Integer) ? value : 0

      # An error's message; a job's own exception class may fail to build one.
      def message(error)
        error.message
      rescue Exception => problem # rubocop:disable Lint/RescueException -- a broken message must not stop the worker
        "(#{error.class}#message raised #{problem.class})"
      end

      # Text as valid UTF-8: binary strings are read as UTF-8, other encodings converted; bad bytes become U+FFFD.
      def utf8(text)
        text = text.to_s
        return text.dup.force_encoding(Encoding::UTF_8).scrub if text.encoding == Encoding::BINARY
        text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
      end

      def dead(field, job, now)
        job["died_at"] = now
        [field, "dead", now, Payload.dump(job)]
      end
    end
  end
end

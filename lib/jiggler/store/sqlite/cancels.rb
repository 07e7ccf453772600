# frozen_string_literal: true

require_relative "../cancel_request"

module Jiggler
  module Store
    class SQLite
      # Requests to cancel running jobs (Jiggler.cancel): rows of cancel_requests, kept CANCEL_RETENTION seconds so a
      # server that starts later finds them. Each request bumps the "cancels" counter and rings the Doorbell, so a
      # waiting server on this machine hears it at once; a ring that is lost is caught by the waiter's slow poll.
      module Cancels
        # Seconds a request is kept: a job fetched this long after its cancel is still cancelled when it starts.
        CANCEL_RETENTION = 600

        # Records a request to cancel a job and announces it to every server.
        # @parameter jid [String]
        # @parameter by [String] who asked, as the job's final state will say.
        # @parameter now [Float] epoch seconds.
        def request_cancel(jid, by, now)
          write do |db|
            db.execute(
              "DELETE FROM cancel_requests WHERE at < ?",
              [now - CANCEL_RETENTION]
            )
            db.execute(
              "INSERT INTO cancel_requests (jid, requested_by, at) " \
              "VALUES (?, ?, ?)",
              [jid, by, now]
            )
            count(db, "cancels", 1)
          end
          doorbell.ring
        end

        # The requests made in the last CANCEL_RETENTION seconds, oldest first.
        # @returns [Array(CancelRequest)]
        def cancel_requests(now)
          rows = with do |db|
            db.execute(
              "SELECT jid, requested_by, at FROM cancel_requests " \
              "WHERE at >= ? ORDER BY at",
              [now - CANCEL_RETENTION]
            )
          end
          rows.map { |jid, by, at| CancelRequest.new(jid: jid, by: by, at: at) }
        end

        # Waits until a request is announced or `timeout` seconds pass.
        # @returns [Boolean] whether one was (true on the first call: the caller has not looked yet).
        def wait_for_cancels(timeout)
          return !!(@cancels_seen = cancel_count) unless @cancels_seen
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
          until (seen = cancel_count) != @cancels_seen
            left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
            return false if left <= 0
            sleep(PUSH_POLL) if doorbell.wait([left, ANNOUNCE_POLL].min).nil?
          end
          @cancels_seen = seen
          true
        end

        # Deletes the cancel requests (part of Store::SQLite#clear_all).
        def clear_cancels
          write { |db| db.execute("DELETE FROM cancel_requests") }
        end

        private

        def cancel_count
          with do |db|
            db.get_first_value(
              "SELECT value FROM counters WHERE name = 'cancels'"
            ).to_i
          end
        end
      end
    end
  end
end

# frozen_string_literal: true

require_relative "../cancel_request"

module Jiggler
  module Store
    class Postgres
      # Requests to cancel running jobs (Jiggler.cancel): rows of `cancel_requests`, kept
      # CANCEL_RETENTION seconds so a server that starts later finds them. Each request NOTIFYs a
      # channel of its own in its transaction (it leaves at commit, never for a rollback); a waiting
      # server LISTENs on a connection of its own, outside the pool, as Wake does for pushes.
      module Cancels
        # Seconds a request is kept: a job fetched this long after its cancel is still cancelled
        # when it starts.
        CANCEL_RETENTION = 600

        INSERT = "INSERT INTO @.cancel_requests (jid, requested_by, at) " \
          "VALUES ($1, $2, $3)"
        RECENT = "SELECT jid, requested_by, at FROM @.cancel_requests " \
          "WHERE at >= $1 ORDER BY at, id"
        private_constant :INSERT, :RECENT

        # Records a request to cancel a job and announces it to every server once committed.
        # @parameter jid [String]
        # @parameter by [String] who asked, as the job's final state will say.
        # @parameter now [Float] epoch seconds.
        def request_cancel(jid, by, now)
          write do
            @db.query(
              "DELETE FROM @.cancel_requests WHERE at < $1",
              [now - CANCEL_RETENTION]
            )
            @db.query(INSERT, [jid, by, now])
            @db.query("SELECT 1 FROM pg_notify($1, $2)", [cancel_channel, jid])
          end
        end

        # The requests made in the last CANCEL_RETENTION seconds, oldest first.
        # @returns [Array(CancelRequest)]
        def cancel_requests(now)
          rows = with { @db.query(RECENT, [now - CANCEL_RETENTION]) }
          rows.map { |jid, by, at| CancelRequest.new(jid: jid, by: by, at: at) }
        end

        # Waits until a request is announced or `timeout` seconds pass.
        # @returns [Boolean] whether one was (true on the first call and after a lost subscription:
        #   one may have been missed before LISTEN took hold).
        # @raises [ConnectionError] when the subscription is lost.
        def wait_for_cancels(timeout)
          return !!subscribe_to_cancels unless @cancel_subscription
          return false unless @cancel_subscription.wait_for_notify(timeout)
          # The rest, already here: one answer for all of them.
          nil while @cancel_subscription.wait_for_notify(0)
          true
        rescue PG::Error => error
          close_cancel_subscription
          raise ConnectionError, @db.failure(error)
        end

        private

        # The channel announcing cancel requests, apart from the wake channel's pushes.
        def cancel_channel = "#{@channel}_cancels"

        # LISTENs on a connection of its own. @returns [PG::Connection]
        def subscribe_to_cancels
          subscription = @db.connect
          subscription.exec(
            "LISTEN #{PG::Connection.quote_ident(cancel_channel)}"
          )
          @cancel_subscription = subscription
        end

        def close_cancel_subscription
          @cancel_subscription&.close
        rescue PG::Error
          nil
        ensure
          @cancel_subscription = nil
        end
      end
    end
  end
end

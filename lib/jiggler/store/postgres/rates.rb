# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Rate limits in PostgreSQL (see ../contract.md, "Concurrency and rate limits"): each key's
      # starts in the last period (rate_starts) and its plan, starts and reservations of waiting
      # jobs (rate_plan). A job over the budget becomes a scheduled job, due when the budget allows.
      # Each step is one call of a function of the schema (Schema::RATE), under the key's
      # transaction advisory lock.
      module Rates
        ACQUIRE = "SELECT outcome, due " \
          "FROM @.acquire_rate($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        private_constant :ACQUIRE

        # Takes a start of a rate-limited key's budget, or moves the job from flight to the
        # scheduled set: one call of the schema's acquire_rate function (one round trip, the key's
        # lock held only for it). Starts are timed by the database's clock once the lock is held.
        # @returns [true | Float | Nil] true: run it; a time: it waits until then; nil: it is no
        #   longer in flight.
        def acquire_rate(
          process,
          fetched,
          key:,
          limit:,
          period:,
          jid:,
          reliable:
        )
          payload = @db.bytes(fetched.payload) unless reliable
          values = [
            "#{@channel}:rate:#{key}",
            key,
            limit,
            period.to_f,
            jid,
            process,
            fetched.handle,
            payload,
            reliable,
            @channel
          ]
          outcome, due = with { @db.query(ACQUIRE, values).first }
          return true if outcome == "run"
          due if outcome == "wait"
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Rate limits in PostgreSQL (see ../contract.md, "Concurrency and rate limits"): each key's
      # starts in the last period (rate_starts) and its plan, starts and reservations of waiting
      # jobs (rate_plan). A job over the budget becomes a scheduled job, due when the budget allows.
      # Each step is one transaction under the key's transaction advisory lock.
      module Rates
        PLAN = "INSERT INTO @.rate_plan (key, member, at) VALUES ($1, $2, $3) " \
          "ON CONFLICT (key, member) DO UPDATE SET at = excluded.at"
        private_constant :PLAN

        # Takes a start of a rate-limited key's budget, or moves the job from flight to the
        # scheduled set.
        # @returns [true | Float | Nil] true: run it; a time: it waits until then; nil: it is no
        #   longer in flight.
        def acquire_rate(process, fetched, key:, limit:, period:, jid:, reliable:)
          now = Time.now.to_f
          write do
            lock_key("rate", key)
            forget_starts(key, now, period)
            reservation = "r:#{jid}"
            returning = @db.value("SELECT at FROM @.rate_plan WHERE key = $1 AND member = $2",
              [key, reservation])
            next start(key, jid, reservation, now) if started(key, now - period) < limit
            due = returning ? oldest_start(key) + period : planned_due(key, limit, period, now)
            defer(process, fetched, due, reliable) or next nil
            @db.query(PLAN, [key, reservation, due])
            due
          end
        end

        private

        def forget_starts(key, now, period)
          @db.query("DELETE FROM @.rate_starts WHERE key = $1 AND at <= $2", [key, now - period])
          @db.query("DELETE FROM @.rate_plan WHERE key = $1 AND at <= $2", [key, now - 2 * period])
        end

        def started(key, since)
          @db.value("SELECT count(*) FROM @.rate_starts WHERE key = $1 AND at > $2", [key, since])
        end

        def start(key, jid, reservation, now)
          member = "#{jid}:#{now}"
          @db.query("INSERT INTO @.rate_starts (key, member, at) VALUES ($1, $2, $3) " \
            "ON CONFLICT (key, member) DO UPDATE SET at = excluded.at", [key, member, now])
          @db.query("DELETE FROM @.rate_plan WHERE key = $1 AND member = $2", [key, reservation])
          @db.query(PLAN, [key, member, now])
          true
        end

        # A job that has not waited yet: the time the start `limit` places before the last planned one
        # leaves the window.
        def planned_due(key, limit, period, now) = [now, nth_planned(key, limit, now) + period].max

        def oldest_start(key) = @db.value("SELECT min(at) FROM @.rate_starts WHERE key = $1", [key])

        # The `limit`-th latest planned start (now when there are fewer).
        def nth_planned(key, limit, now)
          planned = @db.value("SELECT at FROM @.rate_plan WHERE key = $1 " \
            "ORDER BY at DESC LIMIT 1 OFFSET $2", [key, limit - 1])
          planned || now
        end

        # Makes the fetched job a scheduled job due at `due`, announced when it is due sooner than
        # the others, as `schedule` does. @returns [Boolean] false when it is no longer ours.
        def defer(process, fetched, due, reliable)
          earliest = earliest_due
          if reliable
            moved = @db.change("UPDATE @.jobs SET state = 'scheduled', owner = NULL, queue = NULL, " \
              "run_at = $1 WHERE id = $2 AND state = 'in_flight' AND owner = $3",
              [due, fetched.handle, process])
            return false if moved.zero?
          else
            insert("scheduled", [[nil, due, fetched.payload]])
          end
          announce("schedule") if earliest.nil? || due < earliest
          true
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Rate limits in SQLite (see ../contract.md, "Concurrency and rate limits"): each key's starts in the last
      # period (rate_starts) and its plan, starts and reservations of waiting jobs (rate_plan). A job over the budget
      # becomes a scheduled job, due when the budget allows. Each step is one transaction.
      module Rates
        # Takes a start of a rate-limited key's budget, or moves the job from flight to the scheduled set.
        # @returns [true | Float | Nil] true: run it; a time: it waits until then; nil: it is no longer in flight here.
        def acquire_rate(
          process,
          fetched,
          key:,
          limit:,
          period:,
          jid:,
          reliable:
        )
          write do |db|
            # read once the write lock is held, so that starts are recorded in the order taken
            now = Time.now.to_f
            db.execute(
              "DELETE FROM rate_starts WHERE key = ? AND at <= ?",
              [key, now - period]
            )
            db.execute(
              "DELETE FROM rate_plan WHERE key = ? AND at <= ?",
              [key, now - 2 * period]
            )
            reservation = "r:#{jid}"
            returning = db.get_first_value(
              "SELECT at FROM rate_plan WHERE key = ? AND member = ?",
              [key, reservation]
            )
            if db.get_first_value(
              "SELECT count(*) FROM rate_starts WHERE key = ? AND at > ?",
              [key, now - period]
            ) < limit
              start = "#{jid}:#{now}"
              db.execute(
                "INSERT OR REPLACE INTO rate_starts (key, member, at) " \
                "VALUES (?, ?, ?)",
                [key, start, now]
              )
              db.execute(
                "DELETE FROM rate_plan WHERE key = ? AND member = ?",
                [key, reservation]
              )
              db.execute(
                "INSERT OR REPLACE INTO rate_plan (key, member, at) " \
                "VALUES (?, ?, ?)",
                [key, start, now]
              )
              next true
            end
            due = if returning
              oldest_start(db, key) + period
            else
              [now, nth_planned(db, key, limit, now) + period].max
            end
            defer(db, process, fetched, due, reliable) or next nil
            db.execute(
              "INSERT OR REPLACE INTO rate_plan (key, member, at) " \
              "VALUES (?, ?, ?)",
              [key, reservation, due]
            )
            due
          end
        end

        private

        def oldest_start(db, key)
          db.get_first_value(
            "SELECT min(at) FROM rate_starts WHERE key = ?",
            [key]
          )
        end

        # The `limit`-th latest planned start (now when there are fewer).
        def nth_planned(db, key, limit, now)
          db.get_first_value(
            "SELECT at FROM rate_plan WHERE key = ? " \
            "ORDER BY at DESC LIMIT 1 OFFSET ?",
            [key, limit - 1]
          ) || now
        end

        # Makes the fetched job a scheduled job due at `due`, announced to idle schedulers when it is due sooner than
        # the others, as `schedule` does. @returns [Boolean] false when it is no longer ours.
        def defer(db, process, fetched, due, reliable)
          earliest = earliest_due(db)
          if reliable
            db.execute(
              "UPDATE jobs SET state = 'scheduled', owner = NULL, " \
              "queue = NULL, run_at = ? " \
              "WHERE id = ? AND state = 'in_flight' AND owner = ?",
              [due, fetched.handle, process]
            )
            return false if db.changes.zero?
            db.add_event(
              fetched.handle,
              {"type" => "rate_limited", "until" => due}
            )
          else
            insert(
              db,
              "scheduled",
              [[nil, due, fetched.payload]],
              "rate_limited"
            )
          end
          count(db, "schedules", 1) if earliest.nil? || due < earliest
          true
        end
      end
    end
  end
end

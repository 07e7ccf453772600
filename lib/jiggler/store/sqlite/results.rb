# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Job results in SQLite: a table of their own, rows deleted once they expire (see `prune`).
      module Results
        # Stores finished jobs' results for `ttl` seconds. @parameter results [Array([String, String])] jid and JSON.
        def save_results(results, ttl)
          expires_at = Time.now.to_f + ttl
          write do |db|
            results.each do |jid, json|
              db.execute(
                "INSERT OR REPLACE INTO results (jid, value, expires_at) " \
                "VALUES (?, ?, ?)",
                [jid, json, expires_at]
              )
            end
          end
        end

        # @returns [String | Nil] a finished job's stored result, nil when there is none (yet).
        def result(jid)
          with do |db|
            db.get_first_value(
              "SELECT value FROM results WHERE jid = ? AND expires_at > ?",
              [jid, Time.now.to_f]
            )
          end
        end
      end
    end
  end
end

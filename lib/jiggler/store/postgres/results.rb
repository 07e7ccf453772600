# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Job results in PostgreSQL: a table of their own, rows deleted once they expire (see
      # `prune`).
      module Results
        # The last result of a jid saved twice in one call wins.
        SAVE = "INSERT INTO @.results (jid, value, expires_at) " \
          "SELECT DISTINCT ON (j) j, v, $3 " \
          "FROM unnest($1::text[], $2::text[]) " \
          "WITH ORDINALITY AS r(j, v, n) ORDER BY j, n DESC " \
          "ON CONFLICT (jid) DO UPDATE " \
          "SET value = excluded.value, expires_at = excluded.expires_at"
        private_constant :SAVE

        # Stores finished jobs' results for `ttl` seconds. @parameter results [Array([String,
        # String])] jid and JSON.
        def save_results(results, ttl)
          return if results.empty?
          jids, values = results.transpose
          with do
            @db.query(SAVE, [jids, values, Time.now.to_f + ttl])
          end
        end

        # @returns [String | Nil] a finished job's stored result, nil when there is none (yet) or it
        #   expired.
        def result(jid)
          with do
            @db.value(
              "SELECT value FROM @.results WHERE jid = $1 AND expires_at > $2",
              [jid, Time.now.to_f]
            )
          end
        end
      end
    end
  end
end

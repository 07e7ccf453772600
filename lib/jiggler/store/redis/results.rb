# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # Job results in Redis: plain keys that expire.
      module Results
        # Stores finished jobs' results.
        # @parameter results [Array([String, String])] jid and result JSON of each.
        # @parameter ttl [Numeric] seconds to keep them.
        def save_results(results, ttl)
          milliseconds = (ttl * 1000).ceil
          with do |redis|
            redis.pipelined do |pipeline|
              results.each do |jid, json|
                pipeline.call(
                  "SET", @keys.result(jid), json, "PX", milliseconds
                )
              end
            end
          end
        end

        # A finished job's stored result. @returns [String | Nil] its JSON, nil when there is none (yet).
        def result(jid) = with { |redis| redis.call("GET", @keys.result(jid)) }
      end
    end
  end
end

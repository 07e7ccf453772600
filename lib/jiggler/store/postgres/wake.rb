# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Wakes idle servers: pushes (and requeues, due jobs, resumed queues, freed slots) and jobs scheduled sooner
      # than the others NOTIFY the schema's channel in their transaction, so the notification leaves at commit, and
      # not at all on rollback. A waiting server LISTENs on a connection of its own, outside the pool: a session of
      # its own, which a PgBouncer in transaction mode cannot give (README, "PostgreSQL"): there the servers' polls
      # find the work instead.
      module Wake
        KINDS = {"queues" => :queues, "schedule" => :schedule}.freeze
        private_constant :KINDS

        # Waits for an announcement by any process.
        # @returns [Symbol | Nil] :queues, :schedule, :any (both, or announcements may have been missed while the
        #   subscription was lost: look at both), or nil when the timeout passed.
        # @asynchronous
        def wait_for_wake(timeout)
          unless @subscription
            @subscription = subscribe
            return :any if @resubscribing
            @resubscribing = true
          end
          heard = []
          return unless @subscription.wait_for_notify(timeout) { |_, _, kind| heard << kind }
          nil while @subscription.wait_for_notify(0) { |_, _, kind| heard << kind } # the rest, already here
          kinds = heard.map { |kind| KINDS.fetch(kind, :any) }.uniq
          (kinds.size == 1) ? kinds.first : :any
        rescue PG::Error => error
          close_subscription
          raise ConnectionError, @db.failure(error)
        end

        private

        def subscribe
          with { nil } # the schema made
          connection = @db.connect
          connection.exec("LISTEN #{PG::Connection.quote_ident(@channel)}")
          connection
        end

        def close_subscription
          @subscription&.close
        rescue PG::Error
          nil
        ensure
          @subscription = nil
        end
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # Wakes idle servers: pushes (and requeues, due jobs, resumed queues, freed slots) and jobs
      # scheduled sooner than the others NOTIFY the schema's channel in their transaction, so the
      # notification leaves at commit, and not at all on rollback. A waiting server LISTENs on a
      # connection of its own, outside the pool: a session of its own, which a PgBouncer in
      # transaction mode cannot give (docs/stores.md, "PgBouncer"). Behind such a pooler (Connection#pooled?)
      # nothing is announced: a wait only waits, and the servers' polls find the work.
      module Wake
        KINDS = {"queues" => :queues, "schedule" => :schedule}.freeze
        WAITING = "SELECT EXISTS " \
          "(SELECT 1 FROM @.jobs WHERE state = 'queued'), " \
          "EXISTS (SELECT 1 FROM @.jobs " \
          "WHERE state IN ('scheduled', 'retry') AND run_at <= $1)"
        private_constant :KINDS, :WAITING

        # Waits for an announcement by any process.
        # @returns [Symbol | Nil] :queues, :schedule, :any (both, or announcements may have been
        #   missed while the subscription was lost: look at both), or nil when the timeout passed.
        # @asynchronous
        def wait_for_wake(timeout)
          unless @subscription
            missed = subscribe
            return missed if missed
          end
          return sleep(timeout) && nil if @db.pooled?
          owed = owed_rescan_in
          heard = []
          heard_any = @subscription.wait_for_notify(
            owed ? [owed, timeout].min : timeout
          ) { |_, _, kind| heard << kind }
          # a rescan owed to an earlier announcement may run now: the queues again
          return pay_owed_rescan ? :queues : nil unless heard_any
          # The rest, already here.
          while @subscription.wait_for_notify(0) { |_, _, kind| heard << kind }
            nil
          end
          kinds = heard.map { |kind| KINDS.fetch(kind, :any) }.uniq
          # Another process's requeue or a push that committed late may sit behind the claim marks.
          rescan_soon unless kinds == [:schedule]
          (kinds.size == 1) ? kinds.first : :any
        rescue PG::Error => error
          close_subscription
          raise ConnectionError, @db.failure(error)
        end

        private

        # LISTENs on a connection of its own.
        # @returns [Symbol | Nil] what may have been missed before: :any after a lost subscription;
        #   on the first, what already waits (pushed before LISTEN took hold, announced to nobody).
        def subscribe
          @subscription = @db.connect
          # a LISTEN through a pooler hears nothing: its session is not ours
          return if @db.pooled?
          @subscription.exec("LISTEN #{PG::Connection.quote_ident(@channel)}")
          return :any if @resubscribing
          @resubscribing = true
          waiting_work
        end

        # @returns [Symbol | Nil] :queues when jobs are queued, :schedule when entries are due, :any
        #   for both.
        def waiting_work
          queued, due = with { @db.query(WAITING, [Time.now.to_f]).first }
          return :any if queued && due
          return :queues if queued
          :schedule if due
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

# frozen_string_literal: true

require_relative "doorbell"

module Jiggler
  module Store
    class SQLite
      # Wakes idle servers of any process on the machine: pushes and earlier schedules bump two counters, and ring the
      # Doorbell once committed. A waiting server reads the counters when its doorbell rings, and every
      # ANNOUNCE_POLL seconds in case a ring was lost; where it cannot listen, it reads them every PUSH_POLL.
      module Wake
        # Waits for an announcement by any process: a job pushed, or a job scheduled sooner than the others.
        # @returns [Symbol | Nil] :queues, :schedule, :any (both), or nil when the timeout passed.
        # @asynchronous
        def wait_for_wake(timeout)
          @announced ||= announcements
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
          until (seen = announcements) != @announced
            left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
            return if left <= 0
            sleep(PUSH_POLL) if doorbell.wait([left, ANNOUNCE_POLL].min).nil?
          end
          changed = seen.keys.reject { |name| seen[name] == @announced[name] }
          @announced = seen
          (changed.size == 2) ? :any : ANNOUNCED_BY.fetch(changed.first)
        end

        private

        def doorbell = @doorbell ||= Doorbell.new(@path)

        # Rings the doorbell when the transaction that just committed announced work (see `count`).
        def ring_if_announced
          return unless @announced_work
          @announced_work = false
          doorbell.ring
        end

        # How many pushes and announced schedules there have been; changes wake idle fetchers and schedulers.
        def announcements
          counts = with do |db|
            db.execute(
              "SELECT name, value FROM counters " \
              "WHERE name IN ('pushes', 'schedules')"
            ).to_h
          end
          {
            "pushes" => counts["pushes"].to_i,
            "schedules" => counts["schedules"].to_i
          }
        end
      end
    end
  end
end

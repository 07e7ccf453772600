# frozen_string_literal: true

module Jiggler
  module Store
    class SQLite
      # Wakes idle servers of any process on the machine: pushes and earlier schedules bump two counters, which a
      # waiting server polls every few milliseconds (one indexed read).
      module Wake
        # Waits for an announcement by any process: a job pushed, or a job scheduled sooner than the others.
        # @returns [Symbol | Nil] :queues, :schedule, :any (both), or nil when the timeout passed.
        # @asynchronous
        def wait_for_wake(timeout)
          @announced ||= announcements
          deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
          until (seen = announcements) != @announced
            return if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= deadline
            sleep(PUSH_POLL)
          end
          changed = seen.keys.reject { |name| seen[name] == @announced[name] }
          @announced = seen
          (changed.size == 2) ? :any : ANNOUNCED_BY.fetch(changed.first)
        end

        private

        # How many pushes and announced schedules there have been; changes wake idle fetchers and schedulers.
        def announcements
          counts = with { |db| db.execute("SELECT name, value FROM counters WHERE name IN ('pushes', 'schedules')").to_h }
          {"pushes" => counts["pushes"].to_i, "schedules" => counts["schedules"].to_i}
        end
      end
    end
  end
end

# frozen_string_literal: true

require "fugit"

module Jiggler
  class RecurringTask
    # Reads a task's `schedule:` with fugit, once per distinct text: many tasks share a schedule, and fugit takes
    # about a millisecond to read one. When it cannot, it says what is wrong with the text and what is accepted.
    module Schedule
      ACCEPTED = "a cron line (five fields, " \
        "minute hour day-of-month month day-of-week, as \"*/15 * * * *\"; " \
        "or six with seconds first; " \
        "then an optional time zone, as \"0 3 * * * Europe/Paris\") " \
        "or a phrase fugit reads " \
        "(\"every 5 minutes\", \"every day at 3am\", " \
        "\"every monday at noon Europe/Paris\")"
      # A text whose first word is a cron field (digits, "*", ranges, steps, lists) or a nickname
      # is read as a cron line.
      CRON_START = %r{\A(@\w+|[\d*][\d*/,-]*)(\s|\z)}
      ZONE_ADVICE = "use a name of the tz database, " \
        "such as UTC, Europe/Paris or America/New_York"
      RANGES = "minute 0-59, hour 0-23, day of month 1-31, " \
        "month 1-12 or jan-dec, day of week 0-7 or sun-sat"
      # Distinct schedules kept read; past this the cache starts over rather than grow.
      CACHE_SIZE = 10_000
      CACHE = {}
      LOCK = Mutex.new
      private_constant :CRON_START, :ZONE_ADVICE, :RANGES, :CACHE, :LOCK

      module_function

      # The schedule as fugit reads it.
      # @parameter text [String]
      # @returns [Fugit::Cron]
      # @raises [ArgumentError] saying what is wrong with the text and which forms are accepted.
      def parse(text)
        cached = LOCK.synchronize { CACHE[text] }
        return cached if cached
        cron = read(text)
        LOCK.synchronize do
          CACHE.clear if CACHE.size >= CACHE_SIZE
          CACHE[text] = cron
        end
      end

      def read(text)
        parsed = fugit(text)
        return parsed if parsed.is_a?(Fugit::Cron)
        raise ArgumentError, problem(text, parsed)
      end

      def fugit(text)
        Fugit.parse(text, multi: :fail)
      rescue ArgumentError => error
        raise ArgumentError,
          "fugit cannot read (#{error.message.lines.first&.strip}); " \
          "write #{ACCEPTED}"
      end

      # Why a text that is not a schedule was refused, and what to write instead.
      def problem(text, parsed)
        fields = text.split
        if parsed.is_a?(Fugit::Duration) && text.match?(/[a-z]/i)
          return "is a duration, not a schedule: write \"every #{text.strip}\""
        end
        if zone_problem?(fields)
          return "has an unknown time zone #{fields.last.inspect}: " \
            "#{ZONE_ADVICE}"
        end
        if parsed.is_a?(EtOrbi::EoTime)
          return "is one point in time, not a repeating schedule; " \
            "write #{ACCEPTED}"
        end
        return cron_problem(fields) if CRON_START.match?(text.strip)
        "is neither a cron line nor a phrase fugit reads; write #{ACCEPTED}"
      end

      def cron_problem(fields)
        unless (5..7).cover?(fields.size)
          return "is not a cron line: it has #{fields.size} " \
            "field#{"s" unless fields.size == 1}, " \
            "where a cron line has five " \
            "(minute hour day-of-month month day-of-week) " \
            "or six (seconds first), then an optional time zone; " \
            "or write a phrase such as \"every 5 minutes\""
        end
        "is not a valid cron line: a field is out of range or malformed " \
          "(#{RANGES}; each as *, a value, " \
          "a range a-b, a list a,b or a step */n); write #{ACCEPTED}"
      end

      # Fields that read as a cron line once the last (the zone) is left out.
      def zone_problem?(fields)
        (6..7).cover?(fields.size) && !fields.last.match?(/\A[\d*]/) &&
          Fugit.parse_cron(fields[0..-2].join(" ")).is_a?(Fugit::Cron)
      end
    end
  end
end

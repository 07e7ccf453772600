# frozen_string_literal: true

require_relative "../payload"

module Jiggler
  class Web
    # How the views show numbers and times. Every method returns plain text; the view escapes it.
    #
    # The values come from the store, where another writer (or an older version) may have put anything: each method
    # takes any value and shows what is not a finite number as "", "never" or "∞", never raising.
    module Format
      # The latest epoch time shown as a date (9999-12-31): Time#strftime of 1e300 would write a 300-digit year.
      LATEST = 253_402_300_799

      # 1234567 -> "1,234,567".
      def number(value)
        return "" unless value.is_a?(Numeric)
        return "∞" unless value.to_f.finite?
        value.to_i.to_s.gsub(/\B(?=(\d{3})+(?!\d))/, ",")
      end

      # Seconds as a short duration: "0.4 s", "12 s", "5 min", "3 h", "2 d".
      def duration(seconds)
        return "" unless seconds.is_a?(Numeric)
        seconds = seconds.to_f.abs
        return "∞" unless seconds.finite?
        return format("%.1f s", seconds) if seconds < 10
        return "#{seconds.round} s" if seconds < 120
        return "#{(seconds / 60).round} min" if seconds < 7_200
        return "#{(seconds / 3_600).round} h" if seconds < 172_800
        "#{(seconds / 86_400).round} d"
      end

      # An epoch time relative to now: "12 s ago" or "in 5 min"; "never" for +Infinity; "" for what is not a number.
      def relative(epoch)
        epoch = epoch(epoch) or return ""
        return (epoch.positive? ? "never" : "long ago") unless epoch.finite?
        delta = epoch - Time.now.to_f
        delta.positive? ? "in #{duration(delta)}" : "#{duration(delta)} ago"
      end

      # An epoch time in UTC, ISO 8601 to the second; "" for what is not a number.
      def timestamp(epoch)
        epoch = epoch(epoch) or return ""
        unless epoch.abs <= LATEST
          return (epoch.positive? ? "far future" : "far past")
        end
        Time.at(epoch).utc.strftime("%Y-%m-%d %H:%M:%S UTC")
      end

      # A job's run time: "8.25 ms", "1.2 s"; "" for nil.
      def run_time(seconds)
        return "" unless seconds
        (seconds < 1) ? format("%.2f ms", seconds * 1000) : duration(seconds)
      end

      # Kilobytes as megabytes: "84.3 MB"; "" for what is not a finite number.
      def megabytes(kilobytes)
        return "" unless kilobytes.is_a?(Numeric) && kilobytes.to_f.finite?
        format("%.1f MB", kilobytes.to_f / 1024)
      end

      # Epoch seconds from a number or a String of one (heartbeats send "started_at" as a String).
      # @returns [Float | Nil]
      def epoch(value)
        number = value.is_a?(String) ? Float(value, exception: false) : value
        number.to_f if number.is_a?(Numeric) && !number.to_f.nan?
      end

      # Text cut to `limit` characters, with "…" when it was longer.
      def cut(text, limit: 200)
        (text.length > limit) ? "#{text[0, limit]}…" : text
      end

      # A value as compact JSON, cut to `limit` characters.
      def compact_json(value, limit: 200)
        cut(Payload.dump(value), limit: limit)
      # not JSON types, or a string that is not UTF-8
      rescue JSON::GeneratorError
        value.inspect[0, limit]
      end
    end
  end
end

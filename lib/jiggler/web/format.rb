# frozen_string_literal: true

require_relative "../payload"

module Jiggler
  class Web
    # How the views show numbers and times. Every method returns plain text; the view escapes it.
    module Format
      # 1234567 -> "1,234,567".
      def number(value) = value.to_i.to_s.gsub(/\B(?=(\d{3})+(?!\d))/, ",")

      # Seconds as a short duration: "0.4 s", "12 s", "5 min", "3 h", "2 d".
      def duration(seconds)
        seconds = seconds.to_f.abs
        return format("%.1f s", seconds) if seconds < 10
        return "#{seconds.round} s" if seconds < 120
        return "#{(seconds / 60).round} min" if seconds < 7_200
        return "#{(seconds / 3_600).round} h" if seconds < 172_800
        "#{(seconds / 86_400).round} d"
      end

      # An epoch time relative to now: "12 s ago" or "in 5 min"; "" for nil.
      def relative(epoch)
        return "" unless epoch.is_a?(Numeric)
        delta = epoch.to_f - Time.now.to_f
        delta.positive? ? "in #{duration(delta)}" : "#{duration(delta)} ago"
      end

      # An epoch time in UTC, ISO 8601 to the second; "" for nil.
      def timestamp(epoch)
        return "" unless epoch.is_a?(Numeric)
        Time.at(epoch.to_f).utc.strftime("%Y-%m-%d %H:%M:%S UTC")
      end

      # A job's run time: "8.25 ms", "1.2 s"; "" for nil.
      def run_time(seconds)
        return "" unless seconds
        (seconds < 1) ? format("%.2f ms", seconds * 1000) : duration(seconds)
      end

      # Kilobytes as megabytes: "84.3 MB".
      def megabytes(kilobytes) = format("%.1f MB", kilobytes.to_f / 1024)

      # A value as compact JSON, cut to `limit` characters.
      def compact_json(value, limit: 200)
        text = Payload.dump(value)
        (text.length > limit) ? "#{text[0, limit]}…" : text
      rescue JSON::GeneratorError # not JSON types, or a string that is not UTF-8
        value.inspect[0, limit]
      end
    end
  end
end

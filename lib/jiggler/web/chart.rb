# frozen_string_literal: true

require "rack/utils"

module Jiggler
  class Web
    # A job class's chart on the Metrics page, drawn on the server as inline SVG (no script or library): a bar per
    # minute for the runs (the failed part on top, in the danger colour) and a line for the 95th percentile of the
    # durations, each scaled to its own largest value (`most` and `slowest`, which the page prints under it). The
    # drawing stretches to the page's width.
    class Chart
      WIDTH = 600
      HEIGHT = 120

      # The largest number of runs in one minute (at least 1).
      attr_reader :most

      # The largest 95th percentile of one minute, in seconds (0.0 when nothing ran).
      attr_reader :slowest

      # @parameter series [Array(Metrics::Counts)] one per minute, oldest first.
      # @parameter percentile [#call] the 95th percentile of a minute's counts in seconds, or nil.
      def initialize(series, percentile)
        @series = series
        @p95s = series.map { |counts| percentile.call(counts) }
        @most = [series.map(&:runs).max.to_i, 1].max
        @slowest = @p95s.compact.max || 0.0
        @width = WIDTH.to_f / [series.size, 1].max
      end

      # @parameter name [String] the job class, for the label.
      # @returns [String] SVG markup, built from numbers and the escaped name.
      def svg(name)
        %(<svg class="metrics-chart" viewBox="0 0 #{WIDTH} #{HEIGHT}" preserveAspectRatio="none" role="img" ) +
          %(aria-label="#{::Rack::Utils.escape_html(name)}: runs and p95 per minute">#{bars}#{line}</svg>)
      end

      private

      def bars
        @series.each_with_index.map do |counts, index|
          next "" if counts.runs.zero?
          x = (index * @width).round(2)
          bar("runs", x, counts.runs) +
            (counts.failed.positive? ?
              bar("failed", x, counts.failed, top: counts.runs) :
              "")
        end.join
      end

      # A bar of `value` runs whose top is at `top` runs.
      def bar(kind, x, value, top: value)
        y = (HEIGHT - top * HEIGHT.to_f / @most).round(2)
        %(<rect class="#{kind}" x="#{x}" y="#{y}" width="#{
          [@width * 0.8, 0.5].max.round(2)
        }" height="#{(value * HEIGHT.to_f / @most).round(2)}"/>)
      end

      def line
        return "" unless @slowest.positive?
        points = @p95s.each_with_index.filter_map do |p95, index|
          if p95
            "#{((index + 0.4) * @width).round(2)}," \
              "#{(HEIGHT - p95 * (HEIGHT - 2) / @slowest).round(2)}"
          end
        end
        %(<polyline class="p95" points="#{points.join(" ")}"/>)
      end
    end
  end
end

# frozen_string_literal: true

require "rack/utils"

module Jiggler
  class Web
    # A job class's chart on the Metrics page, drawn on the server as inline SVG (no script or library): a bar per
    # minute for the runs (the failed part on top in the danger colour) and a line for the 95th percentile of the
    # durations, each scaled to its own largest value, which the corners name.
    module Chart
      WIDTH = 600
      HEIGHT = 120

      module_function

      # @parameter name [String] the job class, for the label.
      # @parameter series [Array(Metrics::Counts)] one per minute, oldest first.
      # @parameter percentile [#call] seconds of the 95th percentile of a minute's counts, or nil.
      # @returns [String] SVG markup, built from numbers and the escaped name.
      def svg(name, series, percentile)
        most = [series.map(&:runs).max.to_i, 1].max
        p95s = series.map { |counts| percentile.call(counts) }
        slowest = p95s.compact.max || 0.0
        width = WIDTH.to_f / [series.size, 1].max
        %(<svg class="metrics-chart" viewBox="0 0 #{WIDTH} #{HEIGHT + 14}" role="img" aria-label="#{::Rack::Utils.escape_html(name)}: ) +
          %(runs and p95 per minute">#{bars(series, most, width)}#{line(p95s, slowest, width)}) +
          %(<text class="axis" x="2" y="#{HEIGHT + 12}">#{most} runs/min</text>) +
          %(<text class="axis p95" x="#{WIDTH - 2}" y="#{HEIGHT + 12}" text-anchor="end">p95 up to #{(slowest * 1000).round(1)} ms</text></svg>)
      end

      def bars(series, most, width)
        series.each_with_index.map do |counts, index|
          next "" if counts.runs.zero?
          x = (index * width).round(2)
          all = (counts.runs * HEIGHT.to_f / most).round(2)
          failed = (counts.failed * HEIGHT.to_f / most).round(2)
          %(<rect class="runs" x="#{x}" y="#{(HEIGHT - all).round(2)}" width="#{[width - 0.5, 0.5].max.round(2)}" height="#{all}"/>) +
            (failed.positive? ? %(<rect class="failed" x="#{x}" y="#{(HEIGHT - all).round(2)}" width="#{[width - 0.5, 0.5].max.round(2)}" height="#{failed}"/>) : "")
        end.join
      end

      def line(p95s, slowest, width)
        return "" unless slowest.positive?
        points = p95s.each_with_index.filter_map do |p95, index|
          "#{((index + 0.5) * width).round(2)},#{(HEIGHT - p95 * HEIGHT / slowest).round(2)}" if p95
        end
        %(<polyline class="p95" points="#{points.join(" ")}"/>)
      end
    end
  end
end

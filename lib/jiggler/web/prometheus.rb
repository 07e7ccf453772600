# frozen_string_literal: true

require_relative "../../jiggler"
require_relative "../metrics/exposition"
require_relative "../metrics/class_cap"
require_relative "stats"

module Jiggler
  class Web
    # The `/metrics` endpoint for Prometheus, served by the dashboard and mountable alone, with no page or CSRF
    # around it (`map "/metrics" do run Jiggler::Web::Prometheus.new end`). It reads what the dashboard reads.
    class Prometheus
      # @parameter store [Store::Redis | Store::SQLite | Nil] nil means `Jiggler.store`, looked up on each request.
      def initialize(store: nil)
        @store = store
      end

      # Answers a scrape. @returns [Array] status, headers and body.
      def call(_env)
        Prometheus.response(@store || Jiggler.store)
      rescue Store::ConnectionError => error
        Jiggler.logger.error("jiggler metrics: #{error.message}")
        [
          503,
          {"content-type" => "text/plain; charset=utf-8"},
          ["The job store cannot be reached."]
        ]
      end

      # The exposition of a store's numbers as a Rack response; per-class totals within Metrics::ClassCap's bounds.
      def self.response(store)
        classes = Metrics::ClassCap.fold(store.metrics_totals)
        text = Metrics::Exposition.new(Stats.new(store).to_h, classes).to_s
        [200, {"content-type" => Metrics::Exposition::CONTENT_TYPE}, [text]]
      end
    end
  end
end

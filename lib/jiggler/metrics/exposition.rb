# frozen_string_literal: true

require_relative "histogram"
require_relative "../display"

module Jiggler
  module Metrics
    # The Prometheus text exposition format (version 0.0.4) of what the dashboard shows: counters, set sizes, queues,
    # busy workers and processes, and per job class the runs that succeeded and failed and a histogram of durations
    # (counted since the store began, so they only grow, as Prometheus counters must).
    class Exposition
      CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
      # Every eighth bucket bound (0.1 ms times a power of two): the export needs fewer buckets than the percentiles.
      EXPORTED = (0...Histogram::LAST).step(Histogram::PER_DOUBLING).to_a.freeze
      GAUGES = {
        "enqueued" => ["jiggler_enqueued_jobs", "Jobs waiting in all queues."],
        "busy" => [
          "jiggler_busy_workers", "Jobs the live processes are running."
        ],
        "processes" => ["jiggler_processes", "Live server processes."],
        "scheduled" => ["jiggler_scheduled_jobs", "Jobs in the scheduled set."],
        "retry" => ["jiggler_retry_jobs", "Jobs in the retry set."],
        "dead" => ["jiggler_dead_jobs", "Jobs in the dead set."]
      }.freeze
      private_constant :EXPORTED, :GAUGES

      # @parameter stats [Hash] Web::Stats#to_h: counters, set sizes, enqueued, busy, processes and queues.
      # @parameter classes [Hash(String, Counts)] the per-class totals.
      def initialize(stats, classes)
        @stats = stats
        @classes = classes.sort.to_h
        @lines = []
      end

      # @returns [String] the exposition, ending with a newline.
      def to_s
        metric("jiggler_processed_total", "counter", "Jobs that finished.") do
          sample(@stats["processed"])
        end
        metric("jiggler_failed_total", "counter", "Job runs that failed.") do
          sample(@stats["failures"])
        end
        GAUGES.each do |key, (name, help)|
          metric(name, "gauge", help) { sample(@stats[key]) }
        end
        queues
        classes
        @lines.join("\n") << "\n"
      end

      private

      def queues
        queues = @stats["queues"]
        metric("jiggler_queue_size", "gauge", "Jobs waiting in a queue.") do
          queues.each { |q| sample(q["size"], queue: q["name"]) }
        end
        metric(
          "jiggler_queue_latency_seconds",
          "gauge",
          "Seconds the next job of a queue has waited."
        ) do
          queues.each { |q| sample(q["latency"], queue: q["name"]) }
        end
        metric(
          "jiggler_queue_paused",
          "gauge",
          "1 when servers do not fetch from a queue."
        ) do
          queues.each { |q| sample(q["paused"] ? 1 : 0, queue: q["name"]) }
        end
      end

      def classes
        metric(
          "jiggler_class_processed_total",
          "counter",
          "Jobs of a class that finished."
        ) do
          @classes.each { |name, counts| sample(counts.processed, class: name) }
        end
        metric(
          "jiggler_class_failed_total",
          "counter",
          "Runs of a class that failed."
        ) do
          @classes.each { |name, counts| sample(counts.failed, class: name) }
        end
        metric(
          "jiggler_job_duration_seconds",
          "histogram",
          "How long runs of a class took, failed ones included."
        ) do
          @classes.each { |name, counts| histogram(name, counts) }
        end
      end

      def histogram(name, counts)
        running = 0
        sorted = counts.buckets.sort
        EXPORTED.each do |index|
          running += sorted.sum do |bucket, count|
            (bucket <= index && bucket > index - Histogram::PER_DOUBLING) ?
              count :
              0
          end
          sample(
            running,
            suffix: "_bucket",
            class: name,
            le: Histogram::BOUNDS[index].round(6).to_s
          )
        end
        sample(counts.runs, suffix: "_bucket", class: name, le: "+Inf")
        sample(counts.micros / 1_000_000.0, suffix: "_sum", class: name)
        sample(counts.runs, suffix: "_count", class: name)
      end

      def metric(name, type, help)
        @name = name
        @lines << "# HELP #{name} #{help}" << "# TYPE #{name} #{type}"
        yield
      end

      def sample(value, suffix: "", **labels)
        pairs = labels.map { |key, text| %(#{key}="#{escape(text.to_s)}") }
        @lines << "#{@name}#{suffix}#{"{#{pairs.join(",")}}" unless pairs.empty?} #{number(value)}"
      end

      def number(value)
        value.is_a?(Float) ? value.round(6).to_s : value.to_i.to_s
      end

      # Label values are UTF-8 (bad bytes scrubbed) and escape backslashes, double quotes and line feeds.
      def escape(text)
        Display.text(text)
          .gsub("\\", "\\\\\\\\")
          .gsub("\"", "\\\"")
          .gsub("\n", "\\n")
      end
    end
  end
end

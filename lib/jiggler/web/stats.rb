# frozen_string_literal: true

require_relative "../payload"
require_relative "../display"

module Jiggler
  class Web
    # The numbers the dashboard shows and `/stats` serves: counters, set sizes, queues with their latency and pause
    # state, and the live processes. Reads the store once per value and keeps the answers.
    class Stats
      # @parameter store [Store::Redis | Store::SQLite]
      def initialize(store)
        @store = store
      end

      # @returns [Hash(String, Object)] JSON-ready.
      def to_h
        counts = @store.counts.transform_keys(&:to_s)
        counts.merge(
          "enqueued" => queues.sum { |queue| queue["size"] },
          "busy" => busy,
          "processes" => processes.size,
          "queues" => queues,
          "batches" => batches,
          "time" => Time.now.to_f
        )
      end

      # The batches with items waiting.
      # @returns [Array(Hash)] queue, class, size (items waiting) and latency (seconds the oldest has waited).
      def batches
        @batches ||= @store.batch_sizes.map do |queue, name, size, oldest|
          {
            "queue" => Display.text(queue),
            "class" => Display.text(name),
            "size" => size,
            "latency" => waited_since(oldest)
          }
        end
      end

      # Every queue that holds jobs, has jobs waiting for a concurrency slot, or is paused, by name.
      # @returns [Array(Hash)] name (scrubbed to valid UTF-8: another client may have stored any bytes), size, latency
      #   (seconds the next job has waited), paused, and waiting (jobs of limited classes waiting for a slot to run
      #   in it).
      def queues
        @queues ||= begin
          # a row another writer left without a queue
          sizes = @store.queue_sizes.select { |name, _| name.is_a?(String) }
          paused = @store.paused_queues
          waiting = @store.waiting_counts
          (sizes.keys | paused | waiting.keys).sort.map do |name|
            {
              "name" => Display.text(name),
              "size" => sizes.fetch(name, 0),
              "latency" => latency(name),
              "paused" => paused.include?(name),
              "waiting" => waiting.fetch(name, 0)
            }
          end
        end
      end

      # The live processes with what they last reported, parsed strictly; unreadable reports are skipped.
      # @returns [Array([String, Hash])] id and info.
      def processes
        @processes ||= @store.processes.filter_map do |id, json|
          info = Payload.parse(json)
          [id, info] if info.is_a?(Hash)
        rescue Payload::MalformedError
          nil
        end
      end

      # How many jobs the live processes are running.
      def busy
        processes.sum do |_, info|
          info["current_jobs"].is_a?(Hash) ? info["current_jobs"].size : 0
        end
      end

      private

      def latency(name)
        payload = @store.queue_entries(name, limit: 1).first
        enqueued_at = payload && Payload.load(payload)["enqueued_at"]
        enqueued_at.is_a?(Numeric) ? waited_since(enqueued_at) : 0.0
      rescue Payload::MalformedError
        0.0
      end

      # Seconds since an epoch time, never below 0 (another machine's clock may be ahead); 0 for a time that is not a
      # finite number.
      def waited_since(epoch)
        waited = Time.now.to_f - epoch.to_f
        waited.finite? ? [waited, 0.0].max.round(3) : 0.0
      end
    end
  end
end

# frozen_string_literal: true

module Jiggler
  class CLI
    # `jiggler status --probe [-q QUEUE ...]`: a health check for a container or an orchestrator. It passes when, for
    # each queue given, a live server that is not quiet works it (with no queue given: when any live server is not
    # quiet), and fails otherwise: a server that died, hangs (its heartbeat expired) or was quieted fails it.
    class Probe
      # @parameter processes [Array([String, Hash])] the live processes and what they last reported (Web::Stats).
      # @parameter queues [Array(String)] the queues that must be worked; none for any live server.
      def initialize(processes, queues)
        @working = processes.reject { |_, info| info["quiet"] == true }
        @queues = queues
      end

      # @returns [Hash] "ok", the identities of the working servers, and the queues that no working server works.
      def to_h
        missing = @queues.reject do |queue|
          @working.any? { |_, info| queues_of(info).include?(queue) }
        end
        ok = missing.empty? && @working.any?
        {
          "ok" => ok,
          "servers" => @working.map(&:first),
          "queues" => @queues,
          "missing" => missing
        }
      end

      private

      def queues_of(info) = info["queues"].to_s.split(",")
    end
  end
end

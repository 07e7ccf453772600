# frozen_string_literal: true

require_relative "table"

module Jiggler
  class CLI
    # How the admin commands' results read on a terminal: tables for the reads, one line for each change.
    module AdminText
      module_function

      # @parameter command [String] the command that gave the result.
      # @parameter result [Hash] what the command returned (the same as its `--json` output).
      # @returns [String]
      def render(command, result)
        case command
        when "status"
          result.key?("ok") ?
            probe(result) :
            "store: #{result["store"]}\n#{status(result)}"
        when "queues"
          "store: #{result["store"]}\n#{queues(result["queues"])}"
        when "pause", "resume"
          "#{result["paused"] ? "paused" : "resumed"} queue #{result["queue"]}"
        when "clear" then "cleared queue #{result["queue"]}"
        when "retry", "kill", "delete" then sweep(command, result)
        when "cancel" then cancelled(result)
        when "job" then job(result)
        when "workflow" then workflow(result)
        else signal(result)
        end
      end

      def cancelled(result)
        if result["result"] == "removed"
          return "cancelled job #{result["jid"]}: " \
            "it was waiting, and is now in the dead set"
        end
        "asked the servers to cancel job #{result["jid"]}: " \
          "the one running it stops it at its next I/O " \
          "(a job that is not running or waiting is left as it is)"
      end

      # The job's state, then what goes with it, one "name: value" a line.
      def job(result)
        details = result.except("jid", "state").map do |name, value|
          "  #{name}: #{value}"
        end
        ["job #{result["jid"]}: #{result["state"]}", *details].join("\n")
      end

      def workflow(result)
        lines = [
          "workflow #{result["workflow"]}: " +
            result["states"]
              .map { |state, count| "#{state} #{count}" }
              .join(", ")
        ]
        unless result["dead"].empty?
          lines << "dead: #{result["dead"].join(" ")}"
        end
        unless result["blocked"].empty?
          lines << "blocked: #{result["blocked"].join(" ")}"
        end
        lines.join("\n")
      end

      def status(result)
        counts = result["counts"]
          .map { |name, value| "#{name} #{value}" }
          .join("  ")
        processes = result["processes"].map do |row|
          [
            row["host"],
            "#{row["busy"]}/#{row["concurrency"]}",
            row["queues"],
            row["quiet"] ? "quiet" : "running",
            ago(row["heartbeat"]),
            row["id"]
          ]
        end
        "#{counts}\n\nProcesses (#{processes.size})\n" +
          Table.new(
            %w[HOST BUSY QUEUES STATE HEARTBEAT IDENTITY],
            processes,
            numeric: %w[BUSY]
          ).to_s +
          "\nQueues (#{result["queues"].size})\n#{queues(result["queues"])}"
      end

      # One line: the probe's verdict and the store it read.
      def probe(result)
        store = "store: #{result["store"]}"
        if result["servers"].empty?
          return "failed: no live server at work; #{store}"
        end
        unless result["ok"]
          return "failed: no live server works " \
            "#{result["missing"].join(", ")}; #{store}"
        end
        "ok: #{result["servers"].size} live server(s) at work; #{store}"
      end

      def queues(rows)
        rows = rows.map do |queue|
          [
            queue["name"],
            queue["size"],
            format("%.1f s", queue["latency"]),
            queue["paused"] ? "paused" : "running"
          ]
        end
        Table.new(
          %w[QUEUE SIZE LATENCY STATE], rows, numeric: %w[SIZE LATENCY]
        ).to_s
      end

      def sweep(command, result)
        verb = {
          "retry" => "retried",
          "kill" => "killed",
          "delete" => "deleted"
        }.fetch(command)
        of_class = result["class"] ? " of class #{result["class"]}" : ""
        "#{verb} #{result["count"]} jobs#{of_class} in the #{result["set"]} set"
      end

      def signal(result)
        result["processes"].map do |row|
          "asked #{row["host"]} (#{row["id"]}) to #{result["signal"]}; " \
            "it acts at its next heartbeat"
        end.join("\n")
      end

      def ago(epoch)
        epoch.is_a?(Numeric) ?
          format("%.1f s ago", [Time.now.to_f - epoch, 0].max) :
          ""
      end
    end
  end
end

# frozen_string_literal: true

require "etc"
require "fileutils"

module Bench
  # Tables in the seed's format (plus jobs/s and the ratio to Sidekiq) and the results files.
  class Report
    # One measured row. `ideal` is the HTTP workload's jobs x 0.2 s / concurrency.
    # `booted` is the time from spawn to the first job's start; `rate` counts the boot, `run_rate` does not.
    # `kind` (nil but in the activejob workload) names the Sidekiq row a row is compared with; `run_cpu` is the
    # server's CPU seconds from the first job's start to the last one's finish.
    Row = Struct.new(
      :label, :concurrency, :jobs, :seconds, :booted, :start_rss, :finish_rss,
      :cpu, :ideal, :kind, :run_cpu,
      keyword_init: true
    ) do
      def rate = jobs / seconds

      def run_rate = jobs / (seconds - booted)
    end

    def initialize(results_dir, command)
      @results_dir = results_dir
      @command = command
    end

    # Prints a throughput table and writes it to the results directory.
    def throughput(workload, title, rows, note: nil)
      lines = throughput_lines(rows)
      emit(workload, title, lines, note)
    end

    # Prints any table given as a header and rows of cells.
    def table(workload, title, header, rows, note: nil)
      lines = [
        cells(header),
        cells(header.map { |cell| "-" * [cell.length, 3].max })
      ] + rows.map { |row| cells(row) }
      emit(workload, title, lines, note)
    end

    # Prints lines already written as a Markdown table (another script's) and writes them too.
    def lines(workload, title, lines, note: nil)
      emit(workload, title, lines, note)
    end

    def machine
      cpu = File.read("/proc/cpuinfo")[/^model name\s*:\s*(.+)$/, 1]
      memory = File.read("/proc/meminfo")[/^MemTotal:\s+(\d+)/, 1].to_i / 1024
      "#{Etc.nprocessors} CPUs (#{cpu}), #{memory} MB RAM, #{`uname -sr`.strip}"
    end

    attr_writer :redis_version, :yjit, :labels

    def self.count(value)
      value.to_i.to_s.reverse.scan(/\d{1,3}/).join("_").reverse
    end

    private

    def throughput_lines(rows)
      http = rows.any?(&:ideal)
      header = [
        "Job Processor", "Concurrency", "Jobs", "Time", *("Ideal" if http),
        "Start RSS", "Finish RSS", "%CPU", "Jobs/s", "Boot",
        "Jobs/s after boot", "vs Sidekiq"
      ]
      lines = [
        cells(header),
        cells(header.map { |cell| "-" * [cell.length, 3].max })
      ]
      sidekiq = rows.select { |row| row.label.start_with?("Sidekiq") }
      rows.group_by(&:concurrency).each_with_index do |(_, group), index|
        lines << cells(["-", *[""] * (header.size - 1)]) if index.positive?
        group.each { |row| lines << cells(row_cells(row, sidekiq, http)) }
      end
      lines
    end

    def row_cells(row, sidekiq, http)
      [
        row.label,
        row.concurrency.to_s,
        Report.count(row.jobs),
        format("%.2f sec", row.seconds),
        *(format("%.2f sec", row.ideal) if http),
        "#{Report.count(row.start_rss)} kb",
        "#{Report.count(row.finish_rss)} kb",
        format("%.1f", row.cpu),
        Report.count(row.rate),
        format("%.2f sec", row.booted),
        Report.count(row.run_rate),
        ratio(row, sidekiq)
      ]
    end

    # The row's jobs/s over Sidekiq's at the same concurrency (and of the same kind), or over Sidekiq's best when it did
    # not run at that one.
    def ratio(row, sidekiq)
      return "" if sidekiq.empty? || row.label.start_with?("Sidekiq")
      same = sidekiq.find do |other|
        other.concurrency == row.concurrency && other.kind == row.kind
      end
      base = same || sidekiq.max_by(&:rate)
      format(
        "%.2fx%s",
        row.rate / base.rate,
        same ? "" : " (vs c#{base.concurrency})"
      )
    end

    def cells(values) = "| #{values.join(" | ")} |"

    def emit(workload, title, lines, note)
      puts "", "#### #{title}", "", *lines
      puts "", note if note
      return unless @results_dir
      FileUtils.mkdir_p(@results_dir)
      path = File.join(@results_dir, "#{STAMP}-#{workload}.md")
      header = File.exist?(path) ? "" : preamble
      File.write(
        path,
        "#{header}\n#### #{title}\n\n#{lines.join("\n")}\n" \
          "#{"\n#{note}\n" if note}",
        mode: "a"
      )
    end

    def preamble
      <<~MD
        # jiggler benchmark results (#{Time.now.utc.strftime("%Y-%m-%d %H:%M UTC")})

        Command: `#{@command}`

        - Machine: #{machine}
        - Ruby: #{RUBY_DESCRIPTION}; YJIT #{
          @yjit ?
            "on (RUBY_YJIT_ENABLE=1 in every process)" :
            "off (RUBY_YJIT_ENABLE unset in every process)"
        }
        - Redis: #{@redis_version} (a private redis-server, no persistence)
        - Processors: #{@labels}
        - Time: from spawning the server process to the last job finished (the job itself records it); RSS from
          /proc/PID/status when the first job ran and when the last finished; %CPU is the server's user+system CPU time
          over that time.
      MD
    end
  end
end

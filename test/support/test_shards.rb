# frozen_string_literal: true

require "json"
require "fileutils"
require "rbconfig"

# `rake test` runs the test files in several processes at once, the shards (test/support/shard.rb), each with the
# suite's own redis-server, PostgreSQL and Chromium. Most of the suite waits (for a server to boot, a kill to be
# noticed, a lock to expire) rather than computes, so two shards on two cores take about half the time of one.
#
# Files go to shards by their times in test/durations.json, the longest first to the shard with the least so far;
# `rake test:durations` writes there the times of the last run. Files that write the same files under tmp/ (the
# bench's) go to one shard together.
module TestShards
  DURATIONS = "test/durations.json"
  # Each run's logs go to a directory of its own (two runs in one checkout must not share files); its file times are
  # merged into LAST_TIMES, over those of the same files, so a run of one file updates that file's time alone.
  RUNS_DIR = "tmp/test-shards"
  LAST_TIMES = File.join(RUNS_DIR, "durations.json")
  # What a file test/durations.json does not know yet is taken to need: about what a small test file takes.
  UNKNOWN_SECONDS = 2.0
  # Files run by one shard together, each group named by a pattern: they share files under tmp/.
  TOGETHER = [%r{\Atest/bench[/_]}].freeze
  SUMMARY =
    /^(\d+) runs, (\d+) assertions, (\d+) failures, (\d+) errors, (\d+) skips/
  # seconds between two "still running" lines, so a long run shows it is alive
  HEARTBEAT = 60

  module_function

  # @parameter files [Array(String)] test files.
  # @parameter count [Integer] how many shards at most.
  # @returns [Array(Array(String))] the files of each shard.
  def split(files, count)
    known = File.exist?(DURATIONS) ? JSON.parse(File.read(DURATIONS)) : {}
    seconds = ->(unit) {
      unit.sum { |file| known.fetch(file, UNKNOWN_SECONDS) }
    }
    units = files.group_by { |file|
      TOGETHER.find { |pattern| pattern.match?(file) } || file
    }.values
    shards = Array.new(count) { [] }
    loads = Array.new(count, 0.0)
    units.sort_by { |unit| -seconds.call(unit) }.each do |unit|
      lightest = loads.index(loads.min)
      shards[lightest].concat(unit)
      loads[lightest] += seconds.call(unit)
    end
    shards.reject(&:empty?)
  end

  # Runs the shards at once and prints each one's output as it ends, then the sums.
  # @parameter options [Array(String)] Minitest's options, for every shard.
  # @returns [Boolean] whether every shard passed.
  def run(files, count:, options: [])
    # the "still running" lines show as they come, also in a CI log
    $stdout.sync = true
    FileUtils.mkdir_p(RUNS_DIR)
    parts = split(files, count)
    # One shard (one file, or JIGGLER_TEST_SHARDS=1) runs in the foreground, its output as it comes.
    if parts.size == 1
      return system(
        {"JIGGLER_TEST_TIMES" => LAST_TIMES}, *command(files, options)
      )
    end
    dir = File.join(RUNS_DIR, "run-#{Process.pid}")
    FileUtils.rm_rf(dir)
    FileUtils.mkdir_p(dir)
    started = now
    shards = parts.each_with_index.map do |shard_files, index|
      start(dir, index + 1, shard_files, options)
    end
    puts "rake test: #{files.size} files in #{shards.size} processes " \
      "at once (#{shards.map { |shard| shard[:files].size }.join(" + ")} files)"
    wait(shards, started)
    write_times(shards)
    summarize(shards, started).tap { |passed| FileUtils.rm_rf(dir) if passed }
  ensure
    shards&.each { |shard| stop(shard) }
  end

  def start(dir, number, files, options)
    log = File.join(dir, "#{number}.log")
    times = File.join(dir, "#{number}.json")
    pid = Process.spawn(
      {"JIGGLER_TEST_TIMES" => times}, *command(files, options),
      out: log, err: [:child, :out]
    )
    {number: number, files: files, log: log, times: times, pid: pid}
  end

  def command(files, options)
    [
      RbConfig.ruby, "-w", "-Itest", "-Ilib", "test/support/shard.rb",
      *files, "--", *options
    ]
  end

  def wait(shards, started)
    beat = started
    until shards.all? { |shard| shard[:status] }
      shards.reject { |shard| shard[:status] }.each do |shard|
        _, status = Process.wait2(shard[:pid], Process::WNOHANG)
        next unless status
        shard[:status] = status
        shard[:seconds] = now - started
        puts "\n== shard #{shard[:number]} of #{shards.size}: " \
          "#{shard[:files].size} files, #{shard[:seconds].round} s, " \
          "#{status.success? ? "passed" : "FAILED (#{status})"}"
        puts File.read(shard[:log])
      end
      if now - beat >= HEARTBEAT
        beat = now
        running = shards.reject { |shard| shard[:status] }
          .map { |shard| shard[:number] }
        unless running.empty?
          puts "rake test: #{((now - started) / 60).floor} min, " \
            "shard #{running.join(" and ")} running"
        end
      end
      sleep 0.5
    end
  end

  # Merges the shards' file times into LAST_TIMES, for `rake test:durations`.
  def write_times(shards)
    times = [LAST_TIMES, *shards.map { |shard| shard[:times] }]
      .select { |file| File.exist?(file) }
      .map { |file| JSON.parse(File.read(file)) }
    File.write(LAST_TIMES, JSON.generate(times.reduce({}, :merge)))
  end

  def summarize(shards, started)
    sums = shards.map { |shard|
      File.read(shard[:log]).scan(SUMMARY).last&.map(&:to_i) || [0] * 5
    }.transpose.map(&:sum)
    puts format(
      "\nrake test: %d runs, %d assertions, %d failures, %d errors, " \
      "%d skips in %d s (shards: %s)",
      *sums,
      now - started,
      shards.map { |shard| "#{shard[:seconds].round} s" }.join(", ")
    )
    shards.all? { |shard| shard[:status].success? }
  end

  def stop(shard)
    return if shard[:status]
    Process.kill("TERM", shard[:pid])
    Process.wait(shard[:pid])
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  # Writes the last run's file times to test/durations.json, over those of the same files; files gone are dropped.
  def save_durations
    unless File.exist?(LAST_TIMES)
      abort "rake test:durations: no times yet: run rake test first"
    end
    last = JSON.parse(File.read(LAST_TIMES))
    known = File.exist?(DURATIONS) ? JSON.parse(File.read(DURATIONS)) : {}
    merged = known.merge(last).select { |file, _| File.exist?(file) }.sort.to_h
    File.write(DURATIONS, JSON.pretty_generate(merged) + "\n")
    puts "rake test:durations: the times of #{last.size} files written " \
      "to #{DURATIONS} (#{merged.size} in all)"
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# frozen_string_literal: true

module Bench
  # The workloads whose jobs arrive while the server runs (see bench/README.md): HTTP jobs
  # enqueued to an idle server (`http-idle`), a producer process enqueueing at fixed rates
  # (`stream`), and long jobs on `jiggler -p 2` (`long-p2`). Each server is started, given one
  # warm-up job and left until it waits in Redis (idle) before the jobs come. Mixed into
  # Workloads, whose helpers (agent, flush, fresh_dir, yjit_env, @report, @counts) they use.
  module LiveWorkloads
    # The http-idle jobs arrive in this many enqueue_bulk calls.
    IDLE_CALLS = 10
    # Per http-idle count key: the concurrency and the target ratio over the bare loop.
    IDLE_TARGETS = {http_idle: [100, 1.1], http_idle_wide: [1_000, 1.2]}.freeze
    LONG = {processes: 2, concurrency: 10}.freeze

    private

    # HTTP jobs of 200 ms enqueued in ten enqueue_bulk calls to an idle server, timed from the
    # first enqueue call to the last job finished; the bare loop (bench/harness/bare_loop.rb),
    # run just before at the same concurrency, from its first request to its last (neither
    # counts a boot).
    def http_idle
      start_http_server
      @http_url = "http://127.0.0.1:#{@http_port}/hello"
      rows = IDLE_TARGETS.flat_map do |key, (concurrency, _)|
        if @options[:concurrency] &&
            !@options[:concurrency].include?(concurrency)
          next []
        end
        runners = ours.empty? ? [] : bare + ours
        runners.map do |processor|
          http_idle_row(processor, concurrency, @counts[key])
        end
      end
      title = "HTTP from idle: jobs of 200 ms enqueued in #{IDLE_CALLS} " \
        "enqueue_bulk calls to an idle server, first enqueue to last job " \
        "finished (the bare loop: first request to last)"
      header = [
        "Job Processor", "Concurrency", "Jobs", "Time", "Ideal", "Enqueue calls"
      ]
      @report.table(
        "http-idle", title, header, rows, note: http_idle_note(rows)
      )
    end

    def http_idle_row(processor, concurrency, jobs)
      flush
      seconds, enqueueing =
        processor.bare? ? bare_run(concurrency, jobs) : idle_run(processor, concurrency, jobs)
      puts format(
        "  %-32s c%-5d %8d jobs %8.2f s (from idle)",
        processor.label, concurrency, jobs, seconds
      )
      [
        processor.label,
        concurrency.to_s,
        Report.count(jobs),
        format("%.2f sec", seconds),
        format("%.2f sec", jobs.fdiv(concurrency).ceil * 0.2),
        enqueueing ? format("%.3f sec", enqueueing) : "-"
      ]
    end

    # @returns [Array(Float, Nil)] seconds from the first request's start to the last one's end.
    def bare_run(concurrency, jobs)
      env = {"BENCH_JOBS" => jobs.to_s}.merge(yjit_env)
      measure = Measure.new(
        bare.first, @http_url, concurrency, dir: fresh_dir, env: env
      ).start
      [
        measure.wait_for("finished", [120, jobs / 50].max) - measure.first_job,
        nil
      ]
    ensure
      measure&.stop
    end

    # @returns [Array(Float, Float)] seconds from the first enqueue call to the last job finished,
    #   and the seconds the enqueue calls took.
    def idle_run(processor, concurrency, jobs)
      measure = start_idle(processor, concurrency, jobs)
      args = [@http_url].to_json
      output = agent(
        processor, "bulks", "BenchHttpJob", jobs, args, IDLE_CALLS,
        capture: true
      )
      enqueued = JSON.parse(output.lines.last)
      finished = measure.wait_for("finished", [120, jobs / 50].max)
      [finished - enqueued["first"], enqueued["last"] - enqueued["first"]]
    ensure
      measure&.stop
    end

    # Ours over the bare loop at each concurrency, against the issue's targets.
    def http_idle_note(rows)
      notes = IDLE_TARGETS.values.filter_map do |concurrency, target|
        at = rows.select { |row| row[1] == concurrency.to_s }
        mine = at.find { |row| row.first.start_with?("Jiggler") }
        reference = at.find { |row| row.first == bare.first.label }
        next unless mine && reference
        ratio = Float(mine[3].split.first) / Float(reference[3].split.first)
        format(
          "c%d: %s / %s = %.2fx (target <= %.1fx: %s)",
          concurrency, mine[3], reference[3], ratio, target,
          (ratio <= target) ? "met" : "NOT met"
        )
      end
      "Ours over the bare loop: #{notes.join("; ")}." unless notes.empty?
    end

    # A producer process enqueues BenchLagJob at each rate for a few seconds, to an idle server
    # of concurrency 10; each job keeps the time from its enqueue call to its start.
    def stream
      seconds = @counts[:stream_seconds]
      sidekiq = competitors.select { |one| one.kind == :sidekiq }
      plan = (ours.empty? ? [] : [Processor.new(:ours)]) + sidekiq
      rows = plan.product(@counts[:stream_rates]).map do |processor, rate|
        stream_row(processor, rate, seconds)
      end
      title = "Stream: a producer process enqueueing at a fixed rate " \
        "for #{seconds} s to an idle server (concurrency 10): enqueue to start"
      header = [
        "Job Processor", "Rate", "Jobs", "Produced at", "p50", "p99", "max"
      ]
      @report.table("stream", title, header, rows)
    end

    def stream_row(processor, rate, seconds)
      flush
      measure = start_idle(processor, 10, (rate * seconds).round)
      produced = JSON.parse(
        agent(processor, "stream", rate, seconds, capture: true).lines.last
      )
      measure.wait_for("finished", 120)
      lags = File.read(File.join(measure.dir, "lags")).split
        .map { |line| Float(line) * 1000 }
      percentiles = [0.5, 0.99].map do |fraction|
        Bench.percentile(lags, fraction)
      end
      [
        processor.label.sub(/ at-least-once$/, ""),
        "#{Report.count(rate)}/s",
        Report.count(lags.size),
        "#{Report.count(produced["jobs"] / produced["seconds"])}/s",
        *(percentiles + [lags.max]).map { |lag| format("%.2f ms", lag) }
      ]
    ensure
      measure&.stop
    end

    # 40 jobs that sleep (3 s; less with --quick) enqueued in one call to an idle
    # `jiggler -p 2 -c 10`: the rounds they took (their starts bucketed by the job's length)
    # against the ideal, and the time from the enqueue call to the last job finished.
    def long_p2
      jobs, length = @counts[:long_jobs], @counts[:long_seconds]
      plan = ours.empty? ? [] : [Processor.new(:ours, processes: LONG[:processes])]
      rows = plan.map { |processor| long_row(processor, jobs, length) }
      title = "Long jobs: #{jobs} jobs of #{length} s enqueued to an idle " \
        "jiggler -p #{LONG[:processes]} -c #{LONG[:concurrency]}"
      header = [
        "Job Processor", "Jobs", "Rounds", "Ideal rounds", "Time", "Ideal"
      ]
      @report.table("long-p2", title, header, rows)
    end

    def long_row(processor, jobs, length)
      flush
      measure = start_idle(processor, LONG[:concurrency], jobs)
      output = agent(
        processor, "bulks", "BenchSleepJob", jobs, [length].to_json, 1,
        capture: true
      )
      first = JSON.parse(output.lines.last)["first"]
      finished = measure.wait_for("finished", 120)
      starts = File.read(File.join(measure.dir, "starts")).split
        .map { |line| Float(line) }
      rounds = starts
        .map { |start| ((start - starts.min) / length).floor }
        .uniq
        .size
      ideal = jobs.fdiv(LONG[:processes] * LONG[:concurrency]).ceil
      [
        processor.label,
        jobs.to_s,
        rounds.to_s,
        ideal.to_s,
        format("%.2f sec", finished - first),
        format("%.2f sec", ideal * length)
      ]
    ensure
      measure&.stop
    end

    # Starts a server after one warm-up job and returns once it is idle: the warm-up finished
    # and every process waits in Redis (ours in a BLMOVE, Sidekiq in BRPOPs), then half a second.
    # @parameter jobs [Integer] the jobs to come, besides the warm-up one.
    # @returns [Measure]
    def start_idle(processor, concurrency, jobs)
      agent(processor, "bulk", "BenchNoopJob", 1, "[]")
      env = {
        "REDIS_URL" => @redis.url,
        "BENCH_JOBS" => (jobs + 1).to_s
      }.merge(yjit_env)
      jobs_file = @jobs_files.fetch(processor.kind)
      measure = Measure.new(
        processor, jobs_file, concurrency, dir: fresh_dir, env: env
      ).start
      measure.wait_for("started", 60)
      waiting = processor.processes || 1
      Bench.wait_until(60, "#{waiting} idle processes") do
        @redis.blocked_clients >= waiting
      end
      sleep 0.5
      measure
    rescue
      measure&.stop
      raise
    end
  end
end

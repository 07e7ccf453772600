# frozen_string_literal: true

module Bench
  # Parses the options, prepares Redis, the bundles and the jobs files, and runs every selected workload.
  class Workloads
    include LiveWorkloads

    ALL = %w[
      noop enqueue latency sqlite http file cpu idle http-idle stream long-p2
      activejob postgres
    ].freeze
    # What runs without --workloads: activejob needs the Rails test bundle (gemfiles/rails_7_2.gemfile), and postgres
    # PostgreSQL and the GoodJob and Solid Queue bundle, so they are asked for by name.
    DEFAULT = (ALL - %w[activejob postgres]).freeze
    KINDS = {
      "jiggler" => :ours,
      "sidekiq" => :sidekiq,
      "jiggler010" => :jiggler010
    }.freeze
    FULL = {
      noop: 100_000, http: 1_000, http_wide: 10_000, file: 50_000, cpu: 100,
      idle: 60, latency: 200, bulk: 100_000, single: 10_000,
      sqlite_noop: 100_000, activejob: 50_000,
      http_idle: 1_000, http_idle_wide: 10_000,
      stream_rates: [1_000, 5_000, 10_000],
      stream_seconds: 3, long_jobs: 40, long_seconds: 3, postgres: 10_000
    }.freeze
    QUICK = {
      noop: 2_000, http: 50, http_wide: 200, file: 500, cpu: 5, idle: 2,
      latency: 20, bulk: 2_000, single: 200, sqlite_noop: 1_000,
      activejob: 1_000, http_idle: 100, http_idle_wide: 200,
      stream_rates: [500], stream_seconds: 0.4,
      long_jobs: 40, long_seconds: 0.3, postgres: 200
    }.freeze
    LATENCY_GAP = 0.02

    def initialize(argv)
      @options = {
        quick: false, yjit: false, only: KINDS.keys, workloads: DEFAULT
      }
      OptionParser.new do |opts|
        opts.banner = "Usage: bin/bench [--quick] [--yjit] " \
          "[--only jiggler,sidekiq,jiggler010] [--workloads #{ALL.join(",")}]"
        opts.on(
          "--quick",
          "small counts, no install: a smoke run of the harness " \
            "(figures not meaningful)"
        ) { @options[:quick] = true }
        opts.on("--yjit", "RUBY_YJIT_ENABLE=1 in every measured process") do
          @options[:yjit] = true
        end
        opts.on("--only LIST", Array, "processors to run (default all)") do |list|
          @options[:only] = list
        end
        opts.on("--workloads LIST", Array, "workloads to run (default all)") do |list|
          @options[:workloads] = list
        end
        opts.on(
          "--processes LIST",
          Array,
          "run ours as jiggler -p N, once per N listed (e.g. 1,2); " \
            "default: no -p"
        ) do |list|
          @options[:processes] = list.map { |count| Integer(count) }
        end
        opts.on(
          "--concurrency LIST",
          Array,
          "only these of each workload's concurrencies (e.g. 100,1000)"
        ) do |list|
          @options[:concurrency] = list.map { |count| Integer(count) }
        end
        opts.on(
          "--profile [JOBS]",
          Integer,
          "profile our noop hot path with stackprof instead " \
            "(default 100_000 jobs)"
        ) do |jobs|
          @options[:profile] = jobs || 100_000
        end
      end.parse!(argv)
      unknown = (@options[:only] - KINDS.keys) + (@options[:workloads] - ALL)
      abort "bin/bench: unknown #{unknown.join(", ")}" if unknown.any?
      @counts = @options[:quick] ? QUICK : FULL
      @command = (["bin/bench"] + ARGV_COPY).join(" ")
    end

    ARGV_COPY = ARGV.dup.freeze

    def run
      $stdout.sync = true
      @work = Dir.mktmpdir("jiggler-bench")
      results = @options[:quick] ?
        File.join(ROOT, "tmp", "bench-quick") :
        File.join(ROOT, "bench", "results")
      @report = Report.new(results, @command)
      @processors = prepare_processors
      @redis = Redis.new.start
      @report.redis_version = @redis.version
      @report.yjit = @options[:yjit]
      @report.labels = @processors.map(&:label).uniq.join(", ")
      puts "jiggler bench#{
        if @options[:quick]
          " --quick (small counts: checks the harness, figures not meaningful)"
        end
      }"
      puts "Machine: #{@report.machine}",
        "Ruby: #{RUBY_DESCRIPTION}, YJIT #{@options[:yjit] ? "on" : "off"}",
        "Redis: #{@redis.version}"
      @jobs_files = (@processors.map(&:kind) + [:rails]).uniq.to_h do |kind|
        [kind, JobsSource.write(kind, @work)]
      end
      return profile if @options[:profile]
      @options[:workloads].each { |name| send(name.tr("-", "_")) }
      puts "", "Results: #{results}"
    ensure
      @http&.then { |pid| Process.kill(:TERM, pid) && Process.wait(pid) }
      @redis&.stop
      FileUtils.rm_rf(@work) if @work
    end

    private

    # Ours, then Sidekiq and jiggler 0.1.0 (both modes) when selected and their bundles are (or can be) installed.
    def prepare_processors
      list = []
      if @options[:only].include?("jiggler")
        (@options[:processes] || [nil]).each do |count|
          list << Processor.new(:ours, processes: count)
        end
      end
      list << Processor.new(:sidekiq) if @options[:only].include?("sidekiq")
      if @options[:only].include?("jiggler010")
        list.push(
          Processor.new(:jiggler010, mode: "at_least_once"),
          Processor.new(:jiggler010, mode: "at_most_once")
        )
      end
      list.select { |processor| available?(processor) }
    end

    def available?(processor)
      return true if processor.installed?
      name = processor.label.sub(/ \?$/, "")
      if @options[:quick]
        puts "skipping #{name}: its bench bundle is not installed " \
          "(--quick never installs; a full bin/bench run does)"
        return false
      end
      log = File.join(ROOT, "tmp", "bench-bundles", "install.log")
      FileUtils.mkdir_p(File.dirname(log))
      puts "installing #{processor.kind} into tmp/bench-bundles/ (log: #{log})"
      return true if processor.install(log) && processor.installed?
      puts "skipping #{processor.kind}: its bundle did not install (see #{log})"
      false
    end

    def ours = @processors.select(&:ours?)

    # The HTTP workload's reference, run beside ours.
    def bare = @bare ||= [Processor.new(:bare)]

    def competitors = @processors.reject(&:ours?)

    def sidekiq_and_ours
      @processors.reject do |processor|
        processor.kind == :jiggler010 && processor.mode == "at_most_once"
      end
    end

    # Runs bench/harness/profile.rb in the isolated profile bundle (our gemspec plus stackprof).
    def profile
      rails = @options[:workloads] == ["activejob"]
      key = rails ? :profile_rails : :profile
      env = Processor.bundle_env_for(key)
      unless File.exist?(Processor.lockfile(key)) &&
          system(env, "bundle", "check", out: File::NULL)
        puts "installing the profile bundle (our gemspec + stackprof) " \
          "into tmp/bench-bundles/profile"
        unless Processor.install_bundle(
          key,
          File.join(ROOT, "tmp", "bench-bundles", "install.log")
        )
          abort "bin/bench: the profile bundle did not install"
        end
      end
      dir = fresh_dir
      path = File.join(ROOT, "bench", "results", "#{STAMP}-profile.txt")
      environment = ours.first.env(
        env.merge(
          "REDIS_URL" => @redis.url,
          "BENCH_DIR" => dir,
          "BENCH_JOBS" => @options[:profile].to_s
        ).merge(yjit_env)
      )
      concurrency = (@options[:concurrency] || [10]).first.to_s
      job = ["BenchNoopJob", "[]"]
      if @options[:workloads] == ["http"]
        start_http_server
        job = ["BenchHttpJob", ["http://127.0.0.1:#{@http_port}/hello"].to_json]
      end
      loaded = @jobs_files.fetch(:ours)
      # the Active Job noop in bench/rails_app, which loads the jobs file
      if rails
        environment = environment.merge(
          "BENCH_JOBS_FILE" => @jobs_files.fetch(:rails),
          "RAILS_ENV" => "production"
        )
        loaded = File.join(Processor::RAILS_APP, "config", "environment.rb")
        job = [ENV.fetch("BENCH_PROFILE_JOB", "BenchNoopActiveJob"), "[]"]
      end
      output = IO.popen(
        environment,
        [
          RbConfig.ruby, "-rbundler/setup", File.join(__dir__, "profile.rb"),
          loaded, concurrency, *job
        ],
        err: [:child, :out],
        &:read
      )
      puts output
      abort "bin/bench: the profile run failed" unless $?.success?
      FileUtils.mkdir_p(File.dirname(path))
      File.write(
        path,
        "#{@command}\n#{@report.machine}\n" \
          "#{RUBY_DESCRIPTION}, YJIT #{@options[:yjit] ? "on" : "off"}\n\n" \
          "#{output}"
      )
      puts "Profile: #{path}"
    end

    # --- workloads ---

    def noop
      jobs = @counts[:noop]
      plan = ours.product(@options[:quick] ? [10] : [5, 10, 50, 100]) +
        competitors.product(@options[:quick] ? [10] : [5, 10])
      rows = timed(concurrencies(plan), "BenchNoopJob", jobs, "[]")
      @report.throughput(
        "noop",
        "Noop: #{Report.count(jobs)} jobs enqueued before timing (Redis)",
        rows,
        note: target_note(rows, "noop")
      )
    end

    # The bare loop (bench/harness/bare_loop.rb) runs the same GETs beside ours at concurrency 100 and 1_000, in the
    # same run, and the note gives ours' time over its.
    def http
      start_http_server
      @http_url = "http://127.0.0.1:#{@http_port}/hello"
      jobs = @counts[:http]
      reference = ours.empty? ? [] : bare
      plan = sidekiq_and_ours.product(@options[:quick] ? [50] : [5, 10, 15])
      plan += ours.product([50]) unless @options[:quick]
      plan += (reference + ours).product([100]) unless @options[:quick]
      rows = timed(
        concurrencies(plan).sort_by { |_, concurrency| concurrency },
        "BenchHttpJob",
        jobs,
        [@http_url].to_json
      )
      rows += timed(
        concurrencies((reference + ours).product([1_000])),
        "BenchHttpJob",
        @counts[:http_wide],
        [@http_url].to_json
      )
      rows.each { |row| row.ideal = row.jobs * 0.2 / row.concurrency }
      @report.throughput(
        "http",
        "HTTP: #{Report.count(jobs)} jobs " \
          "(#{Report.count(@counts[:http_wide])} at concurrency 1000), " \
          "each a GET that the local server answers after 200 ms",
        rows,
        note: http_note(rows)
      )
    end

    # Ours over the bare loop at concurrency 100 (target 1.1x) and 1_000 (target 1.2x), both timed from spawn.
    def http_note(rows)
      notes = {100 => 1.1, 1_000 => 1.2}.filter_map do |concurrency, target|
        reference = rows.find { |row|
          row.label == bare.first.label && row.concurrency == concurrency
        } or next
        rows.select { |row|
          row.label.start_with?("Jiggler #{OURS_VERSION}") &&
            row.concurrency == concurrency
        }.map do |row|
          ratio = row.seconds / reference.seconds
          format(
            "%s at concurrency %d: %.2f s vs the bare loop's %.2f s " \
              "= %.2fx (target <= %.1fx: %s)",
            row.label,
            concurrency,
            row.seconds,
            reference.seconds,
            ratio,
            target,
            (ratio <= target) ? "met" : "NOT met"
          )
        end
      end.flatten
      "Targets: #{notes.join("; ")}." unless notes.empty?
    end

    # The plan's runs at the concurrencies --concurrency selects (all without it).
    def concurrencies(plan)
      return plan unless @options[:concurrency]
      plan.select { |_, concurrency| @options[:concurrency].include?(concurrency) }
    end

    def file
      path = File.join(@work, "appends.txt")
      jobs = @counts[:file]
      plan = sidekiq_and_ours.product(@options[:quick] ? [10] : [5, 10, 15])
      plan += ours.product([50, 100]) unless @options[:quick]
      rows = timed(
        concurrencies(plan).sort_by { |_, concurrency| concurrency },
        "BenchFileJob",
        jobs,
        [path, "%i"].to_json
      )
      @report.throughput(
        "file",
        "File IO: #{Report.count(jobs)} jobs, " \
          "each appending a line to one file",
        rows
      )
    end

    def cpu
      jobs = @counts[:cpu]
      plan = sidekiq_and_ours.product(@options[:quick] ? [10] : [5, 10])
        .sort_by { |_, concurrency| concurrency }
      rows = timed(concurrencies(plan), "BenchFibJob", jobs, [25].to_json)
      @report.throughput("cpu", "CPU: #{Report.count(jobs)} jobs of fib(25)", rows)
    end

    # Active Job beside native jobs, in one run, on each store (concurrency 10): the native noop without Rails, then
    # inside bench/rails_app the native noop (adding the Rails executor) and the Active Job noop (adding the adapter's
    # payload, the wrapper and Active Job's execution). With Sidekiq selected, the same three on Redis for Sidekiq (its
    # own Active Job adapter, in the same app), each right after ours of the same kind. First, the floor: Active Job's
    # execution alone, with no queue (bench/harness/activejob_floor.rb). The notes give each step's cost per job.
    def activejob
      return if ours.empty?
      jobs = @counts[:activejob]
      rails = Processor.new(:rails)
      sidekiq = competitors.find { |processor| processor.kind == :sidekiq }
      sidekiq_rails = Processor.new(:sidekiq_rails) if sidekiq
      sidekiq_rails = nil unless sidekiq_rails && available?(sidekiq_rails)
      if sidekiq_rails
        @jobs_files[:sidekiq_rails] ||= JobsSource.write(:sidekiq_rails, @work)
      end
      floor = activejob_floor(jobs)
      puts "  Active Job floor, µs/job: " +
        floor.map { |name, times|
          format("%s %.1f (CPU %.1f)", name, times["wall"], times["cpu"])
        }.join(", ")
      [false, true].each do |sqlite|
        plan = [
          [ours.first, "BenchNoopJob", "native"],
          [rails, "BenchNoopJob", "native"],
          [rails, "BenchNoopActiveJob", "Active Job"]
        ]
        if sidekiq_rails && !sqlite
          peers = [
            [sidekiq, "BenchNoopJob", "native"],
            [sidekiq_rails, "BenchNoopJob", "native"],
            [sidekiq_rails, "BenchNoopActiveJob", "Active Job"]
          ]
          plan = plan.zip(peers).flatten(1)
        end
        rows = plan.map do |processor, klass, kind|
          timed_one(
            processor, 10, klass, jobs, "[]", sqlite: sqlite, label: kind
          ).tap do |row|
            # "vs Sidekiq" compares the rows of one kind
            row.kind = [(:rails if processor.rails?), kind]
          end
        end
        store = sqlite ? "SQLite" : "Redis"
        @report.throughput(
          "activejob",
          "Active Job: #{Report.count(jobs)} noop jobs " \
            "enqueued before timing (#{store})",
          rows,
          note: activejob_note(rows, floor)
        )
      end
    end

    # Runs bench/harness/activejob_floor.rb in the Rails bundle: µs per job of `ActiveJob::Base.execute` alone and
    # inside the executor.
    def activejob_floor(jobs)
      rails = Processor.new(:rails)
      env = rails.env(
        {
          "BENCH_JOBS_FILE" => @jobs_files.fetch(:rails),
          "BENCH_DIR" => fresh_dir,
          "REDIS_URL" => @redis.url
        }.merge(yjit_env)
      )
      command = [
        RbConfig.ruby,
        "-rbundler/setup",
        File.join(__dir__, "activejob_floor.rb"),
        File.join(Processor::RAILS_APP, "config", "environment.rb"),
        jobs.to_s
      ]
      output = IO.popen(env, command, err: [:child, :out], &:read)
      raise "the Active Job floor failed:\n#{output}" unless $?.success?
      JSON.parse(output.lines.last)
    end

    # Microseconds per job of the executor and of Active Job, and Active Job's rate over native (target >= 0.5x), for
    # ours and for Sidekiq when it ran; ours over Sidekiq for each kind; each Active Job row over the floor.
    # The server's CPU time per job (boot included, and after boot) is given too: on a busy machine it moves less than
    # wall time.
    def activejob_note(rows, floor)
      mine, sidekiq = rows.partition { |row| row.label.start_with?("Jiggler") }
      plain, executor, active_job = mine.map { |row| 1e6 / row.run_rate }
      ratio = mine[2].run_rate / mine[0].run_rate
      text = format(
        "Per job, after boot: native %.1f µs; the Rails app (executor) " \
          "+%.1f µs; Active Job (adapter, wrapper, execution) +%.1f µs " \
          "more. Server CPU per job (boot included): %s µs. Active Job " \
          "%.0f jobs/s vs native %.0f = %.2fx (target >= 0.5x: %s).",
        plain,
        executor - plain,
        active_job - executor,
        cpu_per_job(mine),
        mine[2].run_rate,
        mine[0].run_rate,
        ratio,
        (ratio >= 0.5) ? "met" : "NOT met"
      )
      if sidekiq.size == 3
        peer = sidekiq.map { |row| 1e6 / row.run_rate }
        text += format(
          " Sidekiq, after boot: native %.1f µs; the Rails app (reloader) " \
            "+%.1f µs; Active Job (its adapter and wrapper, execution) " \
            "+%.1f µs more; server CPU per job %s µs. Jiggler over Sidekiq, " \
            "jobs/s after boot: native %.2fx, Rails app native %.2fx, " \
            "Active Job %.2fx; Sidekiq's server CPU per job after boot over " \
            "ours: %.2fx, %.2fx, %.2fx.",
          peer[0],
          peer[1] - peer[0],
          peer[2] - peer[1],
          cpu_per_job(sidekiq),
          *mine.zip(sidekiq).map { |ours, theirs|
            ours.run_rate / theirs.run_rate
          },
          *mine.zip(sidekiq).map { |ours, theirs|
            theirs.run_cpu / ours.run_cpu
          }
        )
      end
      fresh = floor["fresh"]
      text + format(
        " Floor (ActiveJob::Base.execute of the same job in a loop, " \
          "no queue, one process): %s. Active Job after boot over the floor " \
          "of a fresh Hash in the executor: %s.",
        floor.map { |name, times|
          format(
            "%s %.1f µs a job (%.0f jobs/s; CPU %.1f µs)",
            name,
            times["wall"],
            1e6 / times["wall"],
            times["cpu"]
          )
        }.join(", "),
        [mine[2], sidekiq[2]].compact.map do |row|
          format(
            "%s +%.1f µs (%.2fx the floor's rate), CPU +%.1f µs",
            row.label,
            1e6 / row.run_rate - fresh["wall"],
            row.run_rate * fresh["wall"] / 1e6,
            row.run_cpu * 1e6 / row.jobs - fresh["cpu"]
          )
        end.join("; ")
      )
    end

    def cpu_per_job(rows)
      rows
        .map { |row| format("%.0f", row.cpu / 100 * row.seconds * 1e6 / row.jobs) }
        .join(", ") +
        " (after boot: " \
        "#{rows.map { |row| format("%.0f", row.run_cpu * 1e6 / row.jobs) }.join(", ")})"
    end

    def enqueue
      rows = sidekiq_and_ours.map do |processor|
        flush
        timings = JSON.parse(
          agent(processor, "speed", @counts[:bulk], @counts[:single], capture: true)
            .lines.last
        )
        [
          processor.label.sub(/ at-least-once$/, ""),
          format("%.3f sec", timings["bulk"]),
          Report.count(@counts[:bulk] / timings["bulk"]),
          format("%.3f sec", timings["single"]),
          Report.count(@counts[:single] / timings["single"])
        ]
      end
      mine = rows.find { |row| row.first.start_with?("Jiggler #{OURS_VERSION}") }
      note = mine &&
        "Target: enqueue_bulk of 100_000 under 0.5 s: #{mine[1]}" \
        "#{" (scaled from #{Report.count(@counts[:bulk])})" if @options[:quick]}" \
        ": #{(Float(mine[1].split.first) * FULL[:bulk] / @counts[:bulk] < 0.5) ?
          "met" : "NOT met"}."
      others = rows - [mine]
      if mine && others.any?
        fastest = others.min_by { |row| Float(row[3].split.first) }
        note += format(
          " Single enqueue calls at least as fast as the fastest other " \
            "(%s): %s vs %s jobs/s = %.2fx: %s.",
          fastest.first,
          mine[4],
          fastest[4],
          Float(fastest[3].split.first) / Float(mine[3].split.first),
          (Float(mine[3].split.first) <= Float(fastest[3].split.first)) ?
            "met" : "NOT met"
        )
      end
      @report.table(
        "enqueue",
        "Enqueue speed (Redis): one bulk call of " \
          "#{Report.count(@counts[:bulk])} jobs, then " \
          "#{Report.count(@counts[:single])} single enqueue calls",
        [
          "Job Processor",
          "Bulk time",
          "Bulk jobs/s",
          "Single time",
          "Single jobs/s"
        ],
        rows,
        note: note
      )
    end

    def latency
      rows = sidekiq_and_ours.map do |processor|
        latency_row(processor, 10, {"REDIS_URL" => @redis.url})
      end
      @report.table(
        "latency",
        "Latency: enqueue to start with idle workers (Redis), " \
          "#{@counts[:latency]} jobs #{(LATENCY_GAP * 1000).round} ms apart, " \
          "concurrency 10",
        latency_header,
        rows,
        note: latency_note(rows)
      )
    end

    def sqlite
      jobs = @counts[:sqlite_noop]
      ours.each do |processor|
        rows = [10, 50].map do |concurrency|
          timed_one(
            processor, concurrency, "BenchNoopJob", jobs, "[]", sqlite: true
          )
        end
        @report.throughput(
          "sqlite",
          "SQLite store: noop, #{Report.count(jobs)} jobs " \
            "enqueued before timing",
          rows
        )
        latency = [latency_row(processor, 10, sqlite_env)]
        @report.table(
          "sqlite",
          "SQLite store: latency, enqueue to start with idle workers, " \
            "#{@counts[:latency]} jobs #{(LATENCY_GAP * 1000).round} ms apart, " \
            "concurrency 10",
          latency_header,
          latency,
          note: latency_note(latency)
        )
      end
    end

    # jiggler's PostgreSQL store beside GoodJob and Solid Queue on one private PostgreSQL: bench/postgres_peers.rb, in
    # our bundle (it installs the peers' bundle, tmp/bench-bundles/pgpeers/, when missing; --quick only runs it when
    # that bundle is there).
    def postgres
      jobs = @counts[:postgres]
      if @options[:quick] && !Processor.bundle_current?(:pgpeers)
        return puts(
          "skipping postgres: tmp/bench-bundles/pgpeers/ is not installed " \
            "(--quick installs nothing)"
        )
      end
      env = {"BUNDLE_GEMFILE" => File.join(ROOT, "Gemfile")}.merge(yjit_env)
      command = [
        RbConfig.ruby, "-rbundler/setup", "-Ilib", "bench/postgres_peers.rb",
        jobs.to_s, "10", @options[:quick] ? "1" : "2"
      ]
      output = IO.popen(env, command, chdir: ROOT, err: [:child, :out], &:read)
      abort "postgres workload failed:\n#{output}" unless $?.success?
      table = output.lines.map(&:chomp).grep(/\A\|/)
      notes = output.lines.map(&:chomp).grep(/\A(jiggler .* \/ |\d+ noop jobs)/)
      @report.lines(
        "postgres",
        "PostgreSQL: noop, #{Report.count(jobs)} jobs enqueued before timing, " \
          "concurrency 10, jiggler's PostgreSQL store, GoodJob and Solid Queue " \
          "on one PostgreSQL",
        table,
        note: notes.join("  \n")
      )
    end

    def idle
      seconds = @counts[:idle]
      rows = sidekiq_and_ours.map do |processor|
        flush
        agent(processor, "bulk", "BenchNoopJob", 1, "[]")
        measure = Measure.new(
          processor,
          @jobs_files.fetch(processor.kind),
          10,
          dir: fresh_dir,
          env: {"REDIS_URL" => @redis.url, "BENCH_JOBS" => "1"}.merge(yjit_env)
        ).start
        begin
          measure.wait_for("finished", 60)
          sleep 1
          start_rss, cpu, commands = measure.rss, measure.cpu, @redis.commands
          sleep seconds
          finish_rss, used, calls = measure.rss, measure.cpu - cpu, @redis.commands - commands - 1
          [
            processor.label.sub(/ at-least-once$/, ""),
            "10",
            "#{Report.count(start_rss)} kb",
            "#{Report.count(finish_rss)} kb",
            format("%.2f", used / seconds * 100),
            format("%.1f", calls.fdiv(seconds))
          ]
        ensure
          measure.stop
        end
      end
      @report.table(
        "idle",
        "Idle: #{seconds} s with no jobs (Redis)",
        [
          "Job Processor",
          "Concurrency",
          "Start RSS",
          "Finish RSS",
          "%CPU",
          "Redis calls/s"
        ],
        rows
      )
    end

    # --- helpers ---

    def latency_header
      ["Job Processor", "Concurrency", "Jobs", "p50", "p99", "max"]
    end

    # Starts an idle server (after one warm-up job), enqueues jobs one at a time, and reads what each one waited.
    def latency_row(processor, concurrency, env)
      count = @counts[:latency]
      sqlite = !env.key?("REDIS_URL")
      sqlite ? FileUtils.rm_f(Dir["#{env["JIGGLER_SQLITE_PATH"]}*"]) : flush
      agent(processor, "bulk", "BenchNoopJob", 1, "[]", env: env)
      measure = Measure.new(
        processor,
        @jobs_files.fetch(processor.kind),
        concurrency,
        dir: fresh_dir,
        env: env.merge("BENCH_JOBS" => (count + 1).to_s).merge(yjit_env)
      ).start
      begin
        measure.wait_for("started", 60)
        sleep 1
        agent(processor, "latency", count, LATENCY_GAP, env: env)
        measure.wait_for("finished", 60)
        waits = File.readlines(File.join(measure.dir, "latencies"))
          .map { |line| Float(line) * 1000 }
        [
          processor.label.sub(/ at-least-once$/, "") +
            (sqlite ? " (SQLite)" : ""),
          concurrency.to_s,
          count.to_s,
          *[0.5, 0.99].map { |fraction|
            format("%.2f ms", Bench.percentile(waits, fraction))
          },
          format("%.2f ms", waits.max)
        ]
      ensure
        measure.stop
      end
    end

    def latency_note(rows)
      mine = rows.find { |row| row.first.start_with?("Jiggler #{OURS_VERSION}") }
      return unless mine
      p50, p99 = mine[3].to_f, mine[4].to_f
      sidekiq = rows.find { |row| row.first.start_with?("Sidekiq") }
      versus = sidekiq &&
        ", p50 no higher than Sidekiq's (#{mine[3]} vs #{sidekiq[3]}: " \
        "#{(p50 <= sidekiq[3].to_f) ? "met" : "NOT met"})"
      "Target: p50 <= 5 ms (#{mine[3]}: #{(p50 <= 5) ? "met" : "NOT met"}), " \
        "p99 <= 20 ms (#{mine[4]}: #{(p99 <= 20) ? "met" : "NOT met"})" \
        "#{versus}."
    end

    def target_note(rows, _workload)
      mine = rows.select { |row| row.label.start_with?("Jiggler #{OURS_VERSION}") }
      sidekiq = rows.select { |row| row.label.start_with?("Sidekiq") }
      return if mine.empty?
      best = mine.max_by(&:rate)
      text = format(
        "Targets: >= 50_000 jobs/s from one process: best %s at c%d: %s",
        Report.count(best.rate),
        best.concurrency,
        (best.rate >= 50_000) ? "met" : "NOT met"
      )
      unless sidekiq.empty?
        ratio = best.rate / sidekiq.max_by(&:rate).rate
        text += format(
          "; >= 3x Sidekiq's best: %.2fx: %s",
          ratio,
          (ratio >= 3) ? "met" : "NOT met"
        )
        mine_rss = mine.map(&:finish_rss).max
        text += format(
          "; finish RSS no higher than Sidekiq's: %s kb vs %s kb: %s",
          Report.count(mine_rss),
          Report.count(sidekiq.map(&:finish_rss).max),
          (mine_rss <= sidekiq.map(&:finish_rss).max) ? "met" : "NOT met"
        )
      end
      text + "."
    end

    def timed(plan, klass, jobs, args)
      plan.map do |processor, concurrency|
        timed_one(processor, concurrency, klass, jobs, args)
      end
    end

    # Enqueues `jobs` jobs, then times a server from its spawn to the last job finished.
    def timed_one(processor, concurrency, klass, jobs, args, sqlite: false, label: nil)
      env = sqlite ? sqlite_env : {"REDIS_URL" => @redis.url}
      if processor.rails?
        env = env.merge("BENCH_JOBS_FILE" => @jobs_files.fetch(processor.kind))
      end
      sqlite ? FileUtils.rm_f(Dir["#{env["JIGGLER_SQLITE_PATH"]}*"]) : flush
      FileUtils.rm_f(File.join(@work, "appends.txt"))
      agent(processor, "bulk", klass, jobs, args, env: env) unless processor.bare?
      measure = Measure.new(
        processor,
        processor.bare? ? @http_url : @jobs_files.fetch(processor.kind),
        concurrency,
        dir: fresh_dir,
        env: env.merge("BENCH_JOBS" => jobs.to_s).merge(yjit_env)
      ).start
      begin
        finished = measure.wait_for("finished", [120, jobs / 50].max)
        name = [processor.label, label].compact.join(" ") +
          (sqlite ? " (SQLite)" : "")
        row = Report::Row.new(
          label: name,
          concurrency: concurrency,
          jobs: jobs,
          seconds: finished - measure.spawned,
          booted: measure.first_job - measure.spawned,
          start_rss: measure.start_rss,
          finish_rss: measure.rss
        )
        used = measure.cpu
        row.cpu = used / row.seconds * 100
        row.run_cpu = used - measure.start_cpu
        puts format(
          "  %-32s c%-5d %8d jobs %8.2f s %9.0f jobs/s",
          row.label, concurrency, jobs, row.seconds, row.rate
        )
        row
      ensure
        measure.stop
      end
    end

    def agent(processor, *args, env: {"REDIS_URL" => @redis.url}, capture: false)
      command = processor.agent_command(@jobs_files.fetch(processor.kind), *args)
      environment = processor.env(env.merge("BENCH_DIR" => @work).merge(yjit_env))
      output = IO.popen(environment, command, err: [:child, :out], &:read)
      unless $?.success?
        raise "agent #{args.first} for #{processor.label} failed:\n#{output}"
      end
      capture ? output : ""
    end

    def sqlite_env
      {"JIGGLER_SQLITE_PATH" => File.join(@work, "bench.sqlite3")}
    end

    def yjit_env = @options[:yjit] ? {"RUBY_YJIT_ENABLE" => "1"} : {}

    def flush = @redis.call("FLUSHALL")

    def fresh_dir
      @runs = (@runs || 0) + 1
      File.join(@work, "run-#{@runs}").tap { |dir| FileUtils.mkdir_p(dir) }
    end

    def start_http_server
      return if @http
      @http_port = Bench.free_port
      @http = Process.spawn(
        RbConfig.ruby,
        File.join(__dir__, "http_server.rb"),
        @http_port.to_s,
        out: File::NULL
      )
      Bench.wait_until(10, "the HTTP server") { Bench.listening?(@http_port) }
    end
  end
end

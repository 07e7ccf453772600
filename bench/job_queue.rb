# frozen_string_literal: true

# jobq's benchmark table for Jiggler::JobQueue: 'insert' (create), 'poll' and 'append_event', each timed per operation
# (mean, median, stddev, test overhead) on a durable file in WAL mode with synchronous NORMAL (the default) and FULL,
# and on ":memory:", after the naive_serialize and naive_fsync baselines; printed in jobq's format with jobq's published
# figures alongside. Then end-to-end noop throughput through the real `jiggler` server on SQLite: N noop jobs
# enqueued with enqueue_bulk into a fresh file, `exe/jiggler -c 20` started on it, timed until the processed count
# reaches N.
#
#   bundle exec ruby bench/job_queue.rb           # 10,000 reps as jobq, 20,000 jobs end to end, 3 runs: about a minute
#   bundle exec ruby bench/job_queue.rb --quick   # a few seconds, small counts: checks that the harness runs
#   bundle exec ruby bench/job_queue.rb --reps 2000 --jobs 50000 --runs 5

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "etc"
require "fileutils"
require "optparse"
require "rbconfig"
require "securerandom"
require "tmpdir"
require "json"
require "jiggler"
require "jiggler/job_queue"
require "jiggler/store/sqlite"

# Runs the benchmarks and prints the results.
class JobQueueBench
  ROOT = File.expand_path("..", __dir__)
  EXE = File.join(ROOT, "exe", "jiggler")
  CONCURRENCY = 20
  BULK = 1_000

  # jobq's README figures (mean, median, stddev) as it printed them, from its benchmark.py: 10,000 reps on
  # /tmp/jobq-bench.sqlite3 (Python's sqlite3: rollback journal, synchronous FULL) and on ":memory:".
  JOBQ = {
    "naive_serialize" => ["4.4800743 us", "3.876 us", "2.9536885497940415 us"],
    "naive_fsync" => ["4.5833899318 ms", "4.3935955 ms", "3.6405235897574997 ms"],
    "durable insert" => ["10.660283108 ms", "9.6410375 ms", "7.318317035793426 ms"],
    "durable poll" => ["10.2409366588 ms", "9.7355345 ms", "6.566850750848292 ms"],
    "durable append_event" => ["10.4747147621 ms", "9.6445595 ms", "8.221955029149633 ms"],
    "memory insert" => ["49.054487699999996 us", "43.823 us", "13.212556522688379 us"],
    "memory poll" => ["495.27983409999996 us", "161.8315 us", "443.6358523771585 us"],
    "memory append_event" => ["54.1721441 us", "48.054 us", "15.205861822465426 us"]
  }.freeze
  UNITS = {"s" => 1e9, "ms" => 1e6, "us" => 1e3, "ns" => 1}.freeze

  JOBS_SOURCE = <<~RUBY
    # frozen_string_literal: true

    require "jiggler"

    # A job that does nothing: what is measured is jiggler's own cost per job.
    class BenchNoopJob
      include Jiggler::Job

      def perform = nil
    end
  RUBY

  Result = Struct.new(:name, :mean, :median, :stddev)

  def initialize(argv)
    @quick = argv.include?("--quick")
    @reps = @quick ? 200 : 10_000
    @jobs = @quick ? 2_000 : 20_000
    @runs = @quick ? 1 : 3
    OptionParser.new do |opts|
      opts.on("--quick") {}
      opts.on("--reps N", Integer) { |value| @reps = value }
      opts.on("--jobs N", Integer) { |value| @jobs = value }
      opts.on("--runs N", Integer) { |value| @runs = value }
    end.parse!(argv.dup)
    @dir = Dir.mktmpdir("jiggler-bench")
    @results = {}
  end

  def run
    puts "Ruby #{RUBY_VERSION}, SQLite #{SQLite3::SQLITE_VERSION}, " \
      "#{Etc.nprocessors} CPUs, load average " \
      "#{File.read("/proc/loadavg").split.first(3).join(" ")}" \
      "#{" (--quick: small counts, figures not meaningful)" if @quick}"
    puts "Figures labelled 'jobq' are jobq's README's " \
      "(Python, another machine), for comparison."
    puts
    puts "Getting a baseline"
    baseline
    [["normal", "NORMAL"], ["full", "FULL"]].each do |synchronous, label|
      path = File.join(@dir, "jobq-bench-#{synchronous}.sqlite3")
      puts "Testing with #{path} (WAL, synchronous #{label})"
      Jiggler::JobQueue.open(path, synchronous: synchronous) do |queue|
        operations(queue, label, "durable")
      end
    end
    puts "Testing with :memory:"
    Jiggler::JobQueue.open(":memory:") do |queue|
      operations(queue, ":memory:", "memory")
    end
    summary
    end_to_end
  ensure
    FileUtils.rm_rf(@dir)
  end

  private

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)

  def payloads
    Array.new(@reps) do
      {
        "user_id" => rand(0..2**32),
        "msg" => SecureRandom.alphanumeric(256).upcase
      }
    end
  end

  def baseline
    jobs = payloads.each
    bench("naive_serialize", "naive_serialize") do
      JSON.generate([jobs.next, "CREATED"])
    end
    jobs = payloads.each
    File.open(File.join(@dir, "naive-fsync.json"), "w") do |file|
      bench("naive_fsync", "naive_fsync") do
        file.write(JSON.generate([jobs.next, "CREATED"]))
        file.flush
        file.fsync
      end
    end
  end

  def operations(queue, label, kind)
    jobs = payloads.each
    @results[["insert", label]] = bench("insert", "#{kind} insert") do
      queue.create(jobs.next, "CREATED")
    end
    @results[["poll", label]] = bench("poll", "#{kind} poll") do
      queue.poll({state: "CREATED"}, "POLLED")
    end
    reps = @reps
    @results[["append_event", label]] =
      bench("append_event", "#{kind} append_event") do
        queue.append_event(rand(1..reps), {"foo" => "bar"})
      end
  end

  # Times `reps` calls of the block and prints them as jobq does, with jobq's figures for `reference` below.
  def bench(name, reference)
    timings = Array.new(@reps)
    started = now
    @reps.times do |index|
      before = now
      yield
      timings[index] = now - before
    end
    total = now - started
    result = Result.new(name, mean(timings), median(timings), stddev(timings))
    puts "Ran #{name.inspect.tr('"', "'")} #{@reps} times, " \
      "total time #{timer(total)}"
    puts "  mean: #{timer(result.mean)}"
    puts "  median: #{timer(result.median)}"
    puts "  stddev: #{timer(result.stddev)}"
    puts "  test overhead: #{timer((total - timings.sum).fdiv(@reps))}"
    compare(result, JOBQ[reference]) if JOBQ[reference]
    puts
    result
  end

  def compare(result, (mean, median, stddev))
    ratio = nanoseconds(mean) / result.mean
    relation = (ratio >= 1) ? format("%.1fx faster", ratio) : format("%.1fx slower", 1 / ratio)
    puts "  jobq: mean #{mean}, median #{median}, stddev #{stddev} " \
      "(jiggler's mean is #{relation})"
  end

  # "10.66 ms" in nanoseconds.
  def nanoseconds(figure)
    value, unit = figure.split
    Float(value) * UNITS.fetch(unit)
  end

  # jobq's `timer`: nanoseconds in the largest unit that leaves 1 to 9999 of it.
  def timer(nanoseconds)
    [[1e9, "s"], [1e6, "ms"], [1e3, "us"], [1, "ns"]].each do |factor, unit|
      scaled = nanoseconds / factor
      return "#{scaled} #{unit}" if scaled > 1.0 && scaled < 1e4
    end
    "#{nanoseconds.to_f} ns"
  end

  def mean(values) = values.sum.fdiv(values.size)

  def median(values)
    sorted = values.sort
    middle = sorted.size / 2
    sorted.size.odd? ? sorted[middle].to_f : (sorted[middle - 1] + sorted[middle]) / 2.0
  end

  # The sample standard deviation, as Python's statistics.stdev.
  def stddev(values)
    average = mean(values)
    Math.sqrt(values.sum { |value| (value - average)**2 } / (values.size - 1))
  end

  def summary
    puts "Summary: mean per op (median)"
    columns = [
      "WAL/NORMAL", "WAL/FULL", ":memory:", "jobq durable", "jobq :memory:"
    ]
    puts format("  %-13s" + " %-24s" * columns.size, "", *columns).rstrip
    %w[insert poll append_event].each do |name|
      ours = ["NORMAL", "FULL", ":memory:"].map do |label|
        @results.fetch([name, label])
          .then { |result| [result.mean, result.median] }
      end
      theirs = %w[durable memory].map do |kind|
        JOBQ.fetch("#{kind} #{name}").first(2).map { |figure| nanoseconds(figure) }
      end
      cells = (ours + theirs).map do |mean, median|
        "#{short(mean)} (#{short(median)})"
      end
      puts format("  %-13s" + " %-24s" * cells.size, name, *cells).rstrip
    end
    durable = %w[insert poll].map { |name| @results.fetch([name, "NORMAL"]).mean }
    puts "  target: a durable insert or poll well under 1 ms: " \
      "#{(durable.max < 1e6) ? "met" : "NOT met"} " \
      "(WAL/NORMAL means #{durable.map { |value| short(value) }.join(", ")})"
    puts
  end

  def short(nanoseconds)
    return format("%.2f ms", nanoseconds / 1e6) if nanoseconds >= 1e6
    format("%.1f us", nanoseconds / 1e3)
  end

  # Enqueues @jobs noop jobs into a fresh file, then times a `jiggler -c 20` server until they are all processed.
  def end_to_end
    jobs_file = File.join(@dir, "bench_noop_jobs.rb")
    File.write(jobs_file, JOBS_SOURCE)
    require jobs_file
    puts "End to end: #{@jobs} noop jobs through " \
      "exe/jiggler -c #{CONCURRENCY} on SQLite (WAL, synchronous NORMAL), " \
      "#{@runs} run#{"s" if @runs > 1}"
    rates = Array.new(@runs) { |run| end_to_end_run(run + 1, jobs_file) }
    sorted = rates.sort
    median = sorted[sorted.size / 2]
    puts format(
      "  noop throughput: median %.0f jobs/s, best %.0f jobs/s " \
        "over %d run%s; target 20000 jobs/s: %s",
      median,
      sorted.last,
      rates.size,
      (rates.size > 1) ? "s" : "",
      (median >= 20_000) ? "met" : "NOT met"
    )
  end

  def end_to_end_run(run, jobs_file)
    path = File.join(@dir, "e2e-#{run}.sqlite3")
    store = Jiggler::Store::SQLite.new(path: path)
    Jiggler.client = Jiggler::Client.new(store)
    enqueue_started = now
    @jobs.fdiv(BULK).ceil.times do |index|
      BenchNoopJob.enqueue_bulk(Array.new([BULK, @jobs - index * BULK].min) { [] })
    end
    enqueue_time = (now - enqueue_started) / 1e9
    store.close

    log = File.join(@dir, "e2e-#{run}.log")
    env = {
      "REDIS_URL" => nil,
      "JIGGLER_SQLITE_PATH" => path,
      "APP_ENV" => nil,
      "RAILS_ENV" => nil,
      "RACK_ENV" => nil
    }
    spawned = now
    pid = Process.spawn(
      env,
      RbConfig.ruby, EXE, "-r", jobs_file, "-c", CONCURRENCY.to_s,
      out: log, err: [:child, :out], chdir: ROOT
    )
    wait_until(30, "the server to start (log: #{log})") do
      File.read(log).include?("started:")
    end
    started = now
    cpu_before = cpu_seconds(pid)
    reader = SQLite3::Database.new(path, readonly: true)
    reader.busy_timeout = 1_000
    processed = -> {
      reader
        .get_first_value("SELECT value FROM counters WHERE name = 'processed'")
        .to_i
    }
    wait_until([60, @jobs / 500].max, "#{@jobs} jobs processed") do
      processed.call >= @jobs
    end
    finished = now
    cpu = cpu_seconds(pid) - cpu_before
    reader.close
    seconds = (finished - started) / 1e9
    rate = @jobs / seconds
    puts format(
      "  run %d: enqueued in %.2f s (%.0f jobs/s); server boot %.2f s; " \
        "%d jobs processed in %.2f s: %.0f jobs/s " \
        "(server CPU %.2f s, %.0f%% of one core)",
      run,
      enqueue_time,
      @jobs / enqueue_time,
      (started - spawned) / 1e9,
      @jobs,
      seconds,
      rate,
      cpu,
      100 * cpu / seconds
    )
    rate
  ensure
    stop(pid) if pid
  end

  def wait_until(timeout, what)
    deadline = now + timeout * 1e9
    until yield
      raise "timed out after #{timeout} s waiting for #{what}" if now > deadline
      sleep 0.005
    end
  end

  # User + system CPU seconds of a process, from /proc/<pid>/stat.
  def cpu_seconds(pid)
    fields = File.read("/proc/#{pid}/stat").rpartition(")").last.split
    (fields[11].to_i + fields[12].to_i).fdiv(Etc.sysconf(Etc::SC_CLK_TCK))
  rescue Errno::ENOENT
    0.0
  end

  def stop(pid)
    Process.kill(:TERM, pid)
    deadline = now + 30e9
    until Process.wait(pid, Process::WNOHANG)
      if now > deadline
        Process.kill(:KILL, pid)
        Process.wait(pid)
        break
      end
      sleep 0.01
    end
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end
end

JobQueueBench.new(ARGV).run if $PROGRAM_NAME == __FILE__

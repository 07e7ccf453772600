# frozen_string_literal: true

# Profiles our noop hot path with stackprof: N noop jobs on Redis, worked by a server started in this process (as
# exe/jiggler does it), sampled in CPU mode from start to the last job finished. Run by `bin/bench --profile`, in the
# isolated tmp/bench-bundles/profile bundle (our gemspec plus stackprof), with REDIS_URL, BENCH_DIR and BENCH_JOBS set.
#
#   # default BenchNoopJob []
#   ruby -rbundler/setup bench/harness/profile.rb JOBS_FILE [CONCURRENCY [JOB_CLASS ARGS_JSON]]
#
# With `--workloads activejob`, JOBS_FILE is bench/rails_app/config/environment.rb (in the profile_rails bundle:
# the Rails 7.2 test bundle plus stackprof) and JOB_CLASS BenchNoopActiveJob (BENCH_PROFILE_JOB=BenchNoopJob for the
# native noop in the same app).
require "stackprof"
# first: a Rails app must load Rails before jiggler, for its railtie
require File.expand_path(ARGV.fetch(0))
require "jiggler"
require "jiggler/server/launcher"

jobs = Integer(ENV.fetch("BENCH_JOBS"))
concurrency = Integer(ARGV.fetch(1, "10"))
finished = File.join(ENV.fetch("BENCH_DIR"), "finished")
Jiggler.logger.level = Logger::WARN
Jiggler.configure { |config| config[:concurrency] = concurrency }
job = Object.const_get(ARGV.fetch(2, "BenchNoopJob"))
args = JSON.parse(ARGV.fetch(3, "[]"))
BenchClient.bulk(job, Array.new(jobs) { args })

gc_before = GC.stat
cpu_before = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
profile = StackProf.run(mode: :cpu, interval: 50, raw: true) do
  Sync do |task|
    launcher = Jiggler::Server::Launcher.new(config: Jiggler.config.freeze)
    launcher.start(parent: task)
    task.sleep(0.002) until File.exist?(finished)
    launcher.stop
  end
end
seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu_before
puts format(
  "%d %s jobs, concurrency %d: %.2f s (%.0f jobs/s), " \
    "%.1f µs of CPU per job (this process; Redis not counted)",
  jobs, job, concurrency, seconds, jobs / seconds, cpu * 1e6 / jobs
)
gc = GC.stat
puts format(
  "GC: %d runs (%d major), %d ms",
  gc[:count] - gc_before[:count],
  gc[:major_gc_count] - gc_before[:major_gc_count],
  gc.fetch(:time, 0) - gc_before.fetch(:time, 0)
)
File.binwrite(
  File.join(ENV.fetch("BENCH_DIR"), "stackprof-noop.dump"),
  Marshal.dump(profile)
)
StackProf::Report.new(profile).print_text(false, 30)

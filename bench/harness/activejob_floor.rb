# frozen_string_literal: true

# The floor of the activejob workload: `ActiveJob::Base.execute` of the Active Job noop's serialized form in a tight
# loop, in bench/rails_app, with no queue and no server ("execute"); then the same inside the app's executor, which
# every adapter wraps a job in ("executor"); then inside the executor with the serialized job parsed from JSON for each
# run, the parse included, as any queue hands Active Job a new Hash per job ("fresh": Active Job runs slower on new
# Strings than on the same Hash again, by more than the parse). The job is the workload's own (BenchNoopActiveJob,
# marking through BenchDone). Run by bin/bench in the Rails 7.2 bundle with BENCH_JOBS_FILE and BENCH_DIR set; prints
# one JSON line: the fastest of three rounds of each, as µs of wall and CPU time per job.
#
#   ruby -rbundler/setup bench/harness/activejob_floor.rb bench/rails_app/config/environment.rb JOBS
require "json"
require File.expand_path(ARGV.fetch(0))

jobs = Integer(ARGV.fetch(1))
# What a server hands Active Job: the job as enqueued, with the id the queue gave it.
data = BenchNoopActiveJob.new.serialize.merge("provider_job_id" => "0" * 24)
json = JSON.generate(data)
executor = Rails.application.executor
ways = {
  "execute" => -> { ActiveJob::Base.execute(data) },
  "executor" => -> {
    executor.wrap(source: "bench") { ActiveJob::Base.execute(data) }
  },
  "fresh" => -> {
    executor.wrap(source: "bench") { ActiveJob::Base.execute(JSON.parse(json)) }
  }
}

def per_job(jobs, way)
  GC.start
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  cpu = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
  jobs.times { way.call }
  [
    (Process.clock_gettime(Process::CLOCK_MONOTONIC) - wall) * 1e6 / jobs,
    (Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu) * 1e6 / jobs
  ]
end

# warm-up: method caches, lazy loads
ways.each_value { |way| per_job([jobs / 10, 100].max, way) }
rounds = ways.transform_values { [] }
# alternated, so all see the same load
3.times { ways.each { |name, way| rounds[name] << per_job(jobs, way) } }
puts JSON.generate(
  rounds.transform_values do |list|
    {"wall" => list.map(&:first).min, "cpu" => list.map(&:last).min}
  end
)

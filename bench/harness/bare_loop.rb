# frozen_string_literal: true

# The HTTP workload's reference: the same GETs the jobs make, from a plain Async loop with a semaphore of the same
# concurrency, and no job system. Marks the first request's start and the last one's finish as the jobs do.
#
#   ruby -rbundler/setup bench/harness/bare_loop.rb URL CONCURRENCY   # with BENCH_DIR and BENCH_JOBS set
require "async"
require "async/semaphore"
require "net/http"

dir = ENV.fetch("BENCH_DIR")
jobs = Integer(ENV.fetch("BENCH_JOBS"))
url = URI(ARGV.fetch(0))
concurrency = Integer(ARGV.fetch(1))

mark = lambda do |name|
  File.write(
    File.join(dir, "#{name}.tmp"),
    Process.clock_gettime(Process::CLOCK_MONOTONIC).to_s
  )
  File.rename(File.join(dir, "#{name}.tmp"), File.join(dir, name))
end

Sync do
  semaphore = Async::Semaphore.new(concurrency)
  finished = 0
  jobs.times do |index|
    semaphore.async do
      mark.call("started") if index.zero?
      response = Net::HTTP.get_response(url)
      raise "HTTP #{response.code}" unless response.is_a?(Net::HTTPSuccess)
      finished += 1
      mark.call("finished") if finished == jobs
    end
  end
end
# Stays up, as a server does, until the harness has read its RSS and CPU and sends TERM.
sleep

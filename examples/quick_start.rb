# frozen_string_literal: true

# The quick start: enqueues jobs, runs a real `jiggler` server on them, shows progress, and stops it cleanly.
# It uses the embedded SQLite store (a file in a temporary directory), or Redis when REDIS_URL is set.
$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "jiggler"
require "rbconfig"
require "tmpdir"
require_relative "jobs"

$stdout.sync = true # progress lines interleave with the server's log

def enqueue_jobs
  puts "Enqueueing 1,000 SumJobs in one call, 200 SlowApiJobs, a FlakyJob and a job scheduled in 2 s..."
  SumJob.enqueue_bulk((1..1000).map { |n| [n, n * 2] })
  200.times { SlowApiJob.enqueue(100) }
  FlakyJob.enqueue("payments")
  SumJob.with_options(queue: "default").enqueue_in(2, 40, 2)
  1202
end

def show_progress(total, started)
  loop do
    summary = Jiggler.summary
    done = summary["processed_count"] + summary["failures_count"]
    puts format("  %4.1f s: %4d of %d jobs run (%d failed), queues %s, %d scheduled, %d to retry",
      Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, done, total, summary["failures_count"],
      summary["queues"], summary["scheduled_jobs_count"], summary["retry_jobs_count"])
    return if done >= total
    raise "the server did not finish in 30 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) - started > 30
    sleep 0.5
  end
end

def run_server(env)
  here = __dir__
  Process.spawn(env, RbConfig.ruby, File.join(here, "..", "exe", "jiggler"),
    "-r", File.join(here, "jobs.rb"), "-C", File.join(here, "jiggler.yml"), "-c", "50")
end

Dir.mktmpdir("jiggler-example") do |dir|
  env = ENV["REDIS_URL"] ? {} : {"JIGGLER_SQLITE_PATH" => File.join(dir, "jiggler.sqlite3")}
  Jiggler.configure { |config| config[:sqlite_path] = env["JIGGLER_SQLITE_PATH"] } unless ENV["REDIS_URL"]
  puts "Store: #{Jiggler.store.description}"
  Jiggler.config.cleaner.prune_all
  total = enqueue_jobs
  server = run_server(env)
  show_progress(total, Process.clock_gettime(Process::CLOCK_MONOTONIC))
  Process.kill("TERM", server)
  Process.wait(server)
  puts "Server stopped (exit status #{$?.exitstatus}). Jiggler.summary:"
  pp Jiggler.summary.slice("processed_count", "failures_count", "retry_jobs_count", "dead_jobs_count", "queues")
  payload, retry_at = Jiggler.store.set_entries(:retry).first
  puts "FlakyJob waits in the retry set until #{Time.at(retry_at)}: #{payload[0, 150]}..." if payload
  if payload && Jiggler.store.respond_to?(:history)
    puts "Its history so far:"
    Jiggler.store.history(Jiggler::Payload.load(payload)["jid"]).each { |at, event| puts "  #{Time.at(at).utc} #{event}" }
  end
  Jiggler.config.cleaner.prune_all
ensure
  Process.kill("TERM", server) if server && !$?&.exited?
end

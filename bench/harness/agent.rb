# frozen_string_literal: true

# Runs inside a processor's own bundle and enqueues for the harness, through that processor's client.
#
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE bulk CLASS COUNT ARGS_JSON   # ARGS_JSON "%i" = the index
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE speed BULK SINGLE            # prints JSON timings
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE latency COUNT GAP_SECONDS    # one at a time, idle server
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE bulks CLASS COUNT ARGS_JSON CALLS
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE stream RATE SECONDS
# (bulks and stream print JSON timings)
require "json"
require File.expand_path(ARGV.fetch(0))

def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def arguments(template, index) = JSON.parse(template.gsub('"%i"', index.to_s))

command, *rest = ARGV.drop(1)
case command
when "bulk"
  klass, count, template = Object.const_get(rest[0]), Integer(rest[1]), rest[2]
  args = Array.new(count) { |index| arguments(template, index) }
  BenchClient.bulk(klass, args)
when "speed"
  bulk, single = Integer(rest[0]), Integer(rest[1])
  args = Array.new(bulk) { [] }
  started = monotonic
  BenchClient.bulk(BenchNoopJob, args)
  bulk_seconds = monotonic - started
  started = monotonic
  single.times { BenchClient.one(BenchNoopJob, []) }
  puts JSON.generate("bulk" => bulk_seconds, "single" => monotonic - started)
when "latency"
  count, gap = Integer(rest[0]), Float(rest[1])
  count.times do
    BenchClient.one(BenchLatencyJob, [monotonic])
    sleep gap
  end
when "bulks"
  # COUNT jobs in CALLS enqueue_bulk calls, the arguments built before the first call; prints
  # when the first call began and the last returned (CLOCK_MONOTONIC).
  klass, count, template = Object.const_get(rest[0]), Integer(rest[1]), rest[2]
  calls = Integer(rest[3])
  args = Array.new(count) { |index| arguments(template, index) }
  parts = args.each_slice((count + calls - 1) / calls).to_a
  first = monotonic
  parts.each { |part| BenchClient.bulk(klass, part) }
  puts JSON.generate("first" => first, "last" => monotonic)
when "stream"
  # BenchLagJob at RATE jobs/s for SECONDS: each turn enqueues the jobs due by then (one enqueue
  # call when one is due, one bulk call when several are), each stamped with its call's time.
  rate, seconds = Float(rest[0]), Float(rest[1])
  total = (rate * seconds).round
  sent = 0
  started = monotonic
  while sent < total
    now = monotonic
    due = [((now - started) * rate).floor + 1, total].min - sent
    if due == 1
      BenchClient.one(BenchLagJob, [now])
    elsif due > 1
      BenchClient.bulk(BenchLagJob, Array.new(due) { [now] })
    else
      sleep(sent / rate - (now - started))
    end
    sent += due if due.positive?
  end
  puts JSON.generate("jobs" => total, "seconds" => monotonic - started)
else
  abort "agent: unknown command #{command.inspect}"
end

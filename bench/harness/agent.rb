# frozen_string_literal: true

# Runs inside a processor's own bundle and enqueues for the harness, through that processor's client.
#
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE bulk CLASS COUNT ARGS_JSON   # ARGS_JSON "%i" = the index
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE speed BULK SINGLE            # prints JSON timings
#   ruby -rbundler/setup bench/harness/agent.rb JOBS_FILE latency COUNT GAP_SECONDS    # one at a time, idle server
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
else
  abort "agent: unknown command #{command.inspect}"
end

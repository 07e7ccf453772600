# frozen_string_literal: true

# The jobs of bench/postgres.rb: each appends a line to PG_BENCH_FILE, which the bench reads back.
require "jiggler"

PG_BENCH_OUT = File.open(ENV.fetch("PG_BENCH_FILE"), "a")
PG_BENCH_OUT.sync = true

# Records how long after its enqueue (epoch seconds, its argument) it started.
class PickupJob
  include Jiggler::Job

  def perform(enqueued_at) = PG_BENCH_OUT.puts(Time.now.to_f - enqueued_at)
end

# Does nothing; the last of a run (its argument true) records the time it finished.
class NoopJob
  include Jiggler::Job

  def perform(last) = (PG_BENCH_OUT.puts("done #{Time.now.to_f}") if last)
end

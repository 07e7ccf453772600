# frozen_string_literal: true

# The PostgreSQL store's idle pickup latency and noop throughput, on a private PostgreSQL (as the
# tests start it):
#
#   bundle exec ruby -Ilib bench/postgres.rb [PICKUPS] [NOOP_JOBS] [CONCURRENCY]
#
# Pickup: one `jiggler` server idles; a job is enqueued every 20-50 ms, and it records how long
# after its enqueue it started (LISTEN/NOTIFY wakes the server). Noop: NOOP_JOBS jobs enqueued in
# bulk into the idle server, timed from the first enqueue to the last job's end. Both on one
# machine: the client, the server and PostgreSQL share its CPUs.
require "jiggler"
require "tmpdir"
require_relative "../test/support/postgres_server"

pickups, noops, concurrency =
  (ARGV[0] || 200).to_i, (ARGV[1] || 20_000).to_i, (ARGV[2] || 10).to_i
postgres = PostgresServer.new.start
at_exit { postgres.stop }
file = File.join(Dir.mktmpdir("jiggler-pg-bench"), "out.txt")
File.write(file, "")
env = {
  "JIGGLER_DATABASE_URL" => postgres.url,
  "PG_BENCH_FILE" => file,
  "REDIS_URL" => nil
}
ENV.update(env.compact)
require_relative "postgres/jobs"
Jiggler.store.ping # the schema made before the server starts
log = File.join(File.dirname(file), "server.log")
server = Process.spawn(
  env, RbConfig.ruby, "exe/jiggler", "-r", "./bench/postgres/jobs.rb",
  "-c", concurrency.to_s, out: log, err: [:child, :out]
)
at_exit { Process.kill("KILL", server) }
sleep 0.1 until File.read(log).include?("started:")
sleep 1

pickups.times do
  PickupJob.enqueue(Time.now.to_f)
  sleep(rand(0.02..0.05))
end
sleep 0.5
latencies = File.readlines(file).map(&:to_f).sort
percentile = ->(p) { (latencies[(latencies.size * p).ceil - 1] * 1000).round(2) }
puts "pickup (#{latencies.size} jobs, idle server, -c #{concurrency}): " \
  "p50 #{percentile.call(0.5)} ms, p90 #{percentile.call(0.9)} ms, " \
  "p99 #{percentile.call(0.99)} ms"

File.write(file, "")
started = Time.now.to_f
(noops - 1).times.each_slice(1000) do |slice|
  NoopJob.enqueue_bulk(slice.map { [false] })
end
NoopJob.enqueue(true)
enqueued = Time.now.to_f
sleep 0.01 until (done = File.read(file)[/done (\S+)/, 1])
took = done.to_f - started
puts "noop (#{noops} jobs, -c #{concurrency}): " \
  "enqueued in #{(enqueued - started).round(2)} s, " \
  "all done #{took.round(2)} s after the first enqueue: " \
  "#{(noops / took).round} jobs/s"

# frozen_string_literal: true

# jiggler's PostgreSQL store beside GoodJob and Solid Queue, in one run on one private PostgreSQL
# (as the tests start it):
#
#   bundle exec ruby -Ilib bench/postgres_peers.rb [JOBS] [CONCURRENCY] [ROUNDS]
#
# (bin/bench --workloads postgres runs it.) Defaults: 20,000 noop jobs, 10 at once (threads for
# the peers, fibers for jiggler), 2 rounds, the processors alternating within each: jiggler's own
# jobs, jiggler through Active Job in the peers' Rails app, GoodJob and Solid Queue. Each run: the
# jobs are enqueued before timing (jiggler: enqueue_bulk; the others: perform_all_later by 1,000),
# then one worker process is spawned and timed from the spawn to the last job finished, read from
# the database every 20 ms (jiggler: its `processed` counter; the peers: rows with finished_at,
# as both keep finished jobs by default). "after first" leaves the boot out: from the first job
# finished to the last. "RSS at the end" is the worker's resident memory (with its forked
# children) once the last job finished. GoodJob and Solid Queue (with Rails 7.2 and pg) are installed into
# tmp/bench-bundles/pgpeers/, again when its Gemfile changes (bench/harness/processors.rb); bench/postgres_peers/peer.rb
# runs them, and ours through Active Job.
require "jiggler"
require "pg"
require_relative "../test/support/postgres_server"
ROOT = File.expand_path("..", __dir__)
require_relative "harness/processors"

$stdout.sync = true
jobs, concurrency, rounds =
  (ARGV[0] || 20_000).to_i, (ARGV[1] || 10).to_i, (ARGV[2] || 2).to_i
PEERS = %w[good_job solid_queue].freeze
# Ours through Active Job in the peers' Rails app, beside ours native.
OURS = %w[jiggler jiggler_aj].freeze
peer_env = Bench::Processor.bundle_env_for(:pgpeers)
unless Bench::Processor.bundle_current?(:pgpeers)
  puts "installing GoodJob and Solid Queue into tmp/bench-bundles/pgpeers/ ..."
  log = File.join(ROOT, "tmp", "bench-bundles", "pgpeers-install.log")
  FileUtils.mkdir_p(File.dirname(log))
  unless Bench::Processor.install_bundle(:pgpeers, log)
    abort "the peers' bundle did not install (see #{log}): " \
      "#{File.read(log).lines.last(5).join}"
  end
end
versions = File.read(Bench::Processor.lockfile(:pgpeers))
  .scan(/^    (good_job|solid_queue|rails) \(([^)]+)\)/)
  .to_h

postgres = PostgresServer.new.start
at_exit { postgres.stop }
url = postgres.url
ENV["JIGGLER_DATABASE_URL"] = url
ENV.delete("REDIS_URL")
ENV["PG_BENCH_FILE"] = File.join(postgres.dir, "out.txt")
require_relative "postgres/jobs"
Jiggler.store.ping
database = PG.connect(url)
clean = Bench::Processor.unleaked_env
peer = File.join(__dir__, "postgres_peers", "peer.rb")
peer_run = lambda do |kind, *args, **options|
  env = clean.merge(peer_env).merge(
    "DATABASE_URL" => "#{url}?pool=#{concurrency + 5}",
    "RAILS_ENV" => "production",
    "JIGGLER_DATABASE_URL" => url
  )
  [env, RbConfig.ruby, peer, kind.delete_suffix("_aj"), *args, options]
end
PEERS.each do |kind|
  env, *command, options = peer_run.call(kind, "setup")
  system(env, *command, **options) or abort "#{kind}: setup failed"
end

PROCESSED = "SELECT coalesce((SELECT value FROM jiggler.counters " \
  "WHERE name = 'processed'), 0)"
DONE = {
  "jiggler" => PROCESSED,
  "jiggler_aj" => PROCESSED,
  "good_job" => "SELECT count(*) FROM good_jobs WHERE finished_at IS NOT NULL",
  "solid_queue" => "SELECT count(*) FROM solid_queue_jobs WHERE finished_at IS NOT NULL"
}.freeze

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# The text of a process's /proc file; nil once the process has ended.
def proc_read(pid, file)
  File.read("/proc/#{pid}/#{file}")
rescue SystemCallError
  nil
end

# The resident memory of a process and of its descendants (Solid Queue's supervisor forks its worker), in kB.
def tree_rss(pid)
  parents = Dir["/proc/[0-9]*"].map { |path| File.basename(path).to_i }.to_h do |member|
    [member, proc_read(member, "stat").to_s[/\) \S (\d+)/, 1].to_i]
  end
  tree = [pid]
  tree.each { |member| tree.concat(parents.select { |_, parent| parent == member }.keys) }
  tree.sum { |member| proc_read(member, "status").to_s[/VmRSS:\s+(\d+)/, 1].to_i }
end

run = lambda do |kind|
  base = database.exec(DONE.fetch(kind)).getvalue(0, 0).to_i
  enqueue_started = now
  if kind == "jiggler"
    jobs.times.each_slice(1000) do |slice|
      NoopJob.enqueue_bulk(slice.map { [false] })
    end
    env = clean.merge(
      "JIGGLER_DATABASE_URL" => url,
      "PG_BENCH_FILE" => ENV["PG_BENCH_FILE"]
    )
    command = [
      env,
      RbConfig.ruby, "-Ilib", "exe/jiggler",
      "-r", "./bench/postgres/jobs.rb",
      "-c", concurrency.to_s,
      {chdir: ROOT, out: File::NULL}
    ]
  else
    env, *command, options = peer_run.call(kind, "enqueue", jobs.to_s)
    system(env, *command, **options) or abort "#{kind}: enqueue failed"
    env, *command, options =
      peer_run.call(kind, "work", concurrency.to_s, out: File::NULL)
    command = [env, *command, options]
  end
  enqueued = now - enqueue_started
  started = now
  pid = Process.spawn(*command)
  first = nil
  loop do
    done = database.exec(DONE.fetch(kind)).getvalue(0, 0).to_i - base
    first ||= now if done.positive?
    break if done >= jobs
    abort "#{kind}: the worker exited" if Process.wait(pid, Process::WNOHANG)
    abort "#{kind}: not done after 600 s (#{done} of #{jobs})" if now - started > 600
    sleep 0.02
  end
  finished = now
  rss = tree_rss(pid)
  Process.kill("TERM", pid)
  Process.wait(pid)
  {
    kind: kind,
    enqueue: enqueued,
    total: finished - started,
    after_first: finished - first,
    rss: rss
  }
end

label = {
  "jiggler" => "jiggler #{Jiggler::VERSION} (PostgreSQL store)",
  "jiggler_aj" => "jiggler #{Jiggler::VERSION} through Active Job (same store)",
  "good_job" => "GoodJob #{versions["good_job"]}",
  "solid_queue" => "Solid Queue #{versions["solid_queue"]}"
}
puts "#{jobs} noop jobs, concurrency #{concurrency}, #{rounds} rounds, " \
  "PostgreSQL #{database.exec("SHOW server_version").getvalue(0, 0)}, " \
  "Rails #{versions["rails"]} for the peers"
puts "| Round | Processor | Enqueue (s) | Spawn to last (s) | Jobs/s " \
  "| First to last (s) | Jobs/s after first | RSS at the end (kB) |",
  "|---|---|---|---|---|---|---|---|"
results = rounds.times.flat_map do |round|
  order = round.even? ? [*OURS, *PEERS] : [*PEERS.reverse, *OURS.reverse]
  order.map do |kind|
    result = run.call(kind)
    puts format(
      "| %d | %s | %.2f | %.2f | %.0f | %.2f | %.0f | %d |",
      round + 1,
      label[kind],
      result[:enqueue],
      result[:total],
      jobs / result[:total],
      result[:after_first],
      (jobs - 1) / result[:after_first],
      result[:rss]
    )
    result
  end
end

puts
rate = ->(kind, key) {
  results.select { |r| r[:kind] == kind }.map { |r| jobs / r[key] }.sum / rounds
}
OURS.product(PEERS).each do |ours, kind|
  puts format(
    "%s / %s: spawn to last %.2fx, after first %.2fx",
    label[ours],
    label[kind],
    rate.call(ours, :total) / rate.call(kind, :total),
    rate.call(ours, :after_first) / rate.call(kind, :after_first)
  )
end

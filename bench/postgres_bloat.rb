# frozen_string_literal: true

# The PostgreSQL store under a long transaction (the classic failure of queue tables): noop jobs
# run through a real `jiggler` server while another session holds a REPEATABLE READ transaction
# open, so no dead row version of the jobs table can be vacuumed away meanwhile.
#
#   bundle exec ruby -Ilib bench/postgres_bloat.rb [PASSES] [HOLD] [AFTER] [CONCURRENCY]
#
# PASSES alternate without and with the long transaction (default "without,with,without,with"),
# each on a fresh private PostgreSQL (as the tests start it, autovacuum at its defaults). A pass:
# the server starts; a producer keeps about BACKLOG jobs queued (enqueue_bulk of 1,000) for a
# 10 s warm-up, then HOLD seconds (default 60; with the long transaction open), then AFTER
# seconds (default 60; the transaction ended), then stops, and the queue drains for up to 30 s.
# Every 5 s it prints the jobs done in the interval (the `processed` counter), the jobs table's
# total size (heap and indexes, pg_total_relation_size), the queued index's size, and its live
# and dead tuples (pg_stat_user_tables). The last lines give the throughput in the HOLD window of
# each pass and the ratio of the "with" passes to the "without" ones.
require "jiggler"
require "pg"
require "tmpdir"
require_relative "../test/support/postgres_server"

$stdout.sync = true

passes = (ARGV[0] || "without,with,without,with").split(",")
hold, after, concurrency =
  (ARGV[1] || 60).to_i, (ARGV[2] || 60).to_i, (ARGV[3] || 10).to_i
WARMUP = 10
BACKLOG = 5_000
INTERVAL = 5

STATS = <<~SQL
  SELECT (SELECT value FROM jiggler.counters WHERE name = 'processed'),
    pg_total_relation_size('jiggler.jobs'), pg_relation_size('jiggler.jobs_queued'),
    n_live_tup, n_dead_tup, autovacuum_count + vacuum_count
  FROM pg_stat_user_tables WHERE relid = 'jiggler.jobs'::regclass
SQL

# With BLOAT_EXPLAIN set, at the end of the window: the plans of each statement of a fetch (the
# schema's function with a mark, then from the start, in a transaction rolled back, through
# auto_explain), and which statements the server's sessions were running in 200 samples.
def explain(connection)
  connection.set_notice_processor do |message|
    unless message.include?("Buffers")
      puts message.lines.map { |line| "  #{line}" }.join
    end
  end
  connection.exec("LOAD 'auto_explain'")
  connection.exec(
    "SET auto_explain.log_min_duration = 0; " \
      "SET auto_explain.log_analyze = on; " \
      "SET auto_explain.log_nested_statements = on; " \
      "SET auto_explain.log_level = notice; " \
      "SET auto_explain.log_timing = on"
  )
  mark = connection.exec(
    "SELECT run_at, id FROM jiggler.jobs " \
      "WHERE id = (SELECT max(id) - 3000 FROM jiggler.jobs)"
  ).values.first
  acks = connection.exec(
    "SELECT array_agg(id)::text, min(owner) " \
      "FROM (SELECT id, owner FROM jiggler.jobs " \
      "WHERE state = 'in_flight' LIMIT 10) r"
  ).values.first
  [[mark[0], mark[1]], [nil, nil]].each do |at, id|
    puts "fetch #{at ? "after a mark" : "from the start"}:"
    connection.exec("BEGIN")
    connection.exec_params(
      "SELECT count(*) FROM jiggler.fetch($1, '{default}', 10, " \
        "$2::bigint[], true, ARRAY[$3::float8], ARRAY[$4::bigint])",
      [acks[1], acks[0], at, id]
    )
    connection.exec("ROLLBACK")
  end
  connection.exec("SET auto_explain.log_min_duration = -1")
  connection.set_notice_processor { |_| }
  seen = Hash.new(0)
  200.times do
    connection.exec(
      "SELECT left(query, 90), wait_event FROM pg_stat_activity " \
        "WHERE state = 'active' AND pid <> pg_backend_pid() " \
        "AND backend_type = 'client backend'"
    ).values.each { |row| seen[row] += 1 }
    sleep 0.02
  end
  puts "  active statements in 200 samples:"
  seen.sort_by { |_, n| -n }.first(8).each do |(query, wait), n|
    puts "  #{n} #{query.gsub(/\s+/, " ")} (#{wait})"
  end
end

def mb(bytes) = format("%.2f MB", bytes / 1_048_576.0)

def run_pass(kind, hold, after, concurrency)
  postgres = PostgresServer.new.start
  file = File.join(postgres.dir, "out.txt")
  File.write(file, "")
  env = {
    "JIGGLER_DATABASE_URL" => postgres.url,
    "PG_BENCH_FILE" => file,
    "REDIS_URL" => nil
  }
  ENV.update(env.compact)
  ENV.delete("REDIS_URL")
  Jiggler.reset!
  require_relative "postgres/jobs"
  Jiggler.store.ping
  log = File.join(postgres.dir, "server.log")
  server = Process.spawn(
    env, RbConfig.ruby, "exe/jiggler", "-r", "./bench/postgres/jobs.rb",
    "-c", concurrency.to_s, out: log, err: [:child, :out]
  )
  sleep 0.1 until File.read(log).include?("started:")
  stats = PG.connect(postgres.url)
  pushed = 0
  stop = false
  producer = Thread.new do
    counter = PG.connect(postgres.url)
    until stop
      done = counter.exec(STATS).getvalue(0, 0).to_i
      if pushed - done < BACKLOG
        NoopJob.enqueue_bulk(Array.new(1000) { [false] })
        pushed += 1000
      else
        sleep 0.02
      end
    end
    counter.close
  end

  holder = nil
  started = Time.now
  last_done = 0
  sample = lambda do |phase|
    done, total, queued_index, live, dead, vacuums =
      stats.exec(STATS).values.first.map(&:to_i)
    rate = (done - last_done) / INTERVAL.to_f
    last_done = done
    puts format(
      "%-8s %-6s t=%4ds  %7.0f jobs/s  jobs %9s  jobs_queued %9s  " \
        "live %7d  dead %8d  vacuums %d",
      kind, phase, Time.now - started, rate, mb(total), mb(queued_index),
      live, dead, vacuums
    )
    done
  end
  phase_until = ->(phase, seconds) {
    (seconds / INTERVAL).times do
      sleep INTERVAL
      sample.call(phase)
    end
  }
  phase_until.call("warmup", WARMUP)
  if kind == "with"
    holder = PG.connect(postgres.url)
    holder.exec("BEGIN ISOLATION LEVEL REPEATABLE READ")
    xid = holder.exec("SELECT txid_current()").getvalue(0, 0)
    holder.exec("SELECT count(*) FROM jiggler.jobs")
    puts "#{kind}: a session holds transaction #{xid} open " \
      "(REPEATABLE READ, idle) for #{hold} s"
  end
  window_start = [Time.now, last_done]
  phase_until.call("hold", hold)
  done = last_done
  window = (done - window_start[1]) / (Time.now - window_start[0])
  explain(stats) if ENV["BLOAT_EXPLAIN"]
  if holder
    holder.exec("ROLLBACK")
    holder.close
    puts "#{kind}: the long transaction ended"
  end
  phase_until.call("after", after)
  stop = true
  producer.join
  drain = Time.now
  while Time.now - drain < 30
    sleep INTERVAL
    sample.call("idle")
  end
  window
ensure
  Process.kill("TERM", server) if server
  Process.wait(server) if server
  stats&.close
  Jiggler.reset!
  postgres&.stop
end

results = passes.map do |kind|
  rate = run_pass(kind, hold, after, concurrency)
  puts "#{kind}: #{rate.round} jobs/s over the #{hold} s window"
  [kind, rate]
end
by_kind = results.group_by(&:first).transform_values { |list| list.map(&:last) }
puts
puts "window throughput (jobs/s), in run order: " +
  results.map { |kind, rate| "#{kind} #{rate.round}" }.join(", ")
if by_kind["without"] && by_kind["with"]
  without = by_kind["without"].sum / by_kind["without"].size
  with = by_kind["with"].sum / by_kind["with"].size
  puts "mean without #{without.round}, mean with #{with.round}: " \
    "with/without #{(with / without).round(2)}"
end

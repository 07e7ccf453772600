# frozen_string_literal: true

# What each flow-control option costs per job, against a real store (a private redis-server on loopback, and an SQLite
# file): a plain class, and one class per option (unique until it finishes, a concurrency limit, a rate limit). For
# each, N jobs are enqueued with enqueue_bulk (timed: the client's cost per job), then fetched (not timed), then run
# one after another through Server::Processor#call with its Gate, in one fiber, as a worker runs them (timed, wall and
# CPU: the server's cost per job, its store round trips included). The limits are so high that no job ever waits: what
# is measured is what a job pays for the check and the release, not a wait. Rounds alternate the classes; each figure
# is the median of the rounds.
#
#   bundle exec ruby bench/flow_cost.rb                        # 20,000 jobs per class and store, 5 rounds
#   bundle exec ruby bench/flow_cost.rb --quick                # 200 jobs, 1 round: checks that the script runs
#   bundle exec ruby bench/flow_cost.rb --jobs 50000 --rounds 7 --stores redis

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "etc"
require "logger"
require "optparse"
require "tmpdir"
require "fileutils"
require "async"
require "jiggler"
require "jiggler/store/sqlite"
require "jiggler/server/processor"
require "jiggler/server/gate"
require_relative "harness/main"
require_relative "harness/redis"

# The measured classes: each perform does nothing, so what differs is the option.
module FlowCost
  # No option.
  class Plain
    include Jiggler::Job

    def perform(_n) = nil
  end

  # A lock per job, taken at enqueue (one store step per job) and released when it finishes.
  class Unique
    include Jiggler::Job

    job_options unique: {until: :finished}

    def perform(_n) = nil
  end

  # A slot taken before it runs and freed after (one key: the class).
  class Concurrency
    include Jiggler::Job

    job_options concurrency: {limit: 1_000_000}

    def perform(_n) = nil
  end

  # A start of the key's budget taken before it runs.
  class Rate
    include Jiggler::Job

    job_options rate: {limit: 100_000_000, period: 1}

    def perform(_n) = nil
  end

  CLASSES = {
    "plain" => Plain,
    "unique until finished" => Unique,
    "concurrency limit" => Concurrency,
    "rate limit" => Rate
  }.freeze
end

# Runs the rounds and prints the table.
class FlowCostBench
  PROCESS = "flow-cost:1"
  SLICE = 1_000

  def initialize(argv)
    @jobs = 20_000
    @rounds = 5
    @stores = %w[redis sqlite]
    parse(argv)
    @dir = Dir.mktmpdir("jiggler-flow-cost")
  end

  def run
    Jiggler.logger = Logger.new(File::NULL)
    results = @stores.to_h do |name|
      [name, with_store(name) { |store| measure(store) }]
    end
    print_table(results)
  ensure
    FileUtils.rm_rf(@dir)
  end

  private

  def parse(argv)
    OptionParser.new do |options|
      options.on("--quick", "200 jobs, 1 round: checks that the script runs") do
        @jobs, @rounds, @quick = 200, 1, true
      end
      options.on(
        "--jobs N", Integer, "jobs per class, store and round (default 20000)"
      ) { |n| @jobs = n }
      options.on(
        "--rounds N", Integer, "rounds (default 5); figures are medians"
      ) { |n| @rounds = n }
      options.on(
        "--stores LIST", Array, "redis,sqlite (default both)"
      ) { |list| @stores = list }
    end.parse!(argv)
  end

  # Yields a store of the kind named, in a reactor (the server's Redis store is a fiber pool, as a server's is).
  def with_store(name)
    redis = Bench::Redis.new.start if name == "redis"
    Jiggler.configure do |config|
      config[:redis_url] = redis&.url
      config[:sqlite_path] = File.join(@dir, "jobs.sqlite3")
      config[:namespace] = "flow-cost"
    end
    @versions = "#{@versions}#{"Redis #{redis.version} on loopback; " if redis}"
    Sync do
      store = Jiggler::Store.server(Jiggler.config, size: 2)
      Jiggler.client = Jiggler::Client.new(store)
      yield store
    ensure
      store&.close
    end
  ensure
    redis&.stop
  end

  # @returns [Hash(String, Array([Float, Float, Float]))] per class: the medians of enqueue, run wall and run CPU µs.
  def measure(store)
    samples = FlowCost::CLASSES.keys.to_h { |label| [label, []] }
    processor = Jiggler::Server::Processor.new(
      config: Jiggler.config,
      logger: Jiggler.logger,
      results: store,
      gate: Jiggler::Server::Gate.new(
        process: PROCESS, reliable: true, store: -> { store }
      )
    )
    @rounds.times do |round|
      FlowCost::CLASSES.to_a.rotate(round).each do |label, klass|
        samples[label] << once(store, processor, klass)
      end
    end
    samples.transform_values do |rows|
      rows.transpose.map { |values| Bench.percentile(values, 0.5) }
    end
  end

  # One class, one round. @returns [Array(Float)] enqueue µs, run wall µs and run CPU µs per job.
  def once(store, processor, klass)
    store.clear_all
    args = Array.new(@jobs) { |n| [n] }
    enqueue = timed { klass.enqueue_bulk(args) }.first
    fetched = fetch_all(store)
    wall, cpu = timed do
      fetched.each { |job| check(processor.call(job), klass) }
    end
    fetched.map(&:handle).each_slice(SLICE) do |handles|
      store.fetch(PROCESS, [], limit: 0, acks: handles)
    end
    [enqueue, wall, cpu].map { |seconds| seconds * 1_000_000 / @jobs }
  end

  def fetch_all(store)
    jobs = []
    while jobs.size < @jobs
      jobs.concat(store.fetch(PROCESS, ["default"], limit: SLICE))
    end
    jobs
  end

  # A job that waited or failed would measure something else: stop there.
  def check(outcome, klass)
    unless outcome.equal?(Jiggler::Server::Processor::DONE)
      raise "#{klass.name}: a job did not run (#{outcome.inspect}); " \
        "the bench measures jobs that run"
    end
  end

  # @returns [Array(Float)] wall and CPU seconds the block took.
  def timed
    GC.start
    wall, cpu =
      Bench.monotonic, Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
    yield
    [
      Bench.monotonic - wall,
      Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - cpu
    ]
  end

  def print_table(results)
    yjit = (defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?) ? "on" : "off"
    puts "Ruby #{RUBY_VERSION} (YJIT #{yjit}), #{Etc.nprocessors} CPUs; " \
      "#{@versions}SQLite synchronous normal; " \
      "#{@jobs} jobs per class and store, medians of #{@rounds} round(s)" \
      "#{" (--quick: figures not meaningful)" if @quick}"
    puts
    puts "| store | class | enqueue µs/job | run µs/job (wall) " \
      "| run CPU µs/job | run over plain (wall) |"
    puts "|---|---|---|---|---|---|"
    results.each do |store, rows|
      plain = rows["plain"][1]
      rows.each do |label, (enqueue, wall, cpu)|
        over = (label == "plain") ? "-" : format("+%.1f µs (x%.1f)", wall - plain, wall / plain)
        puts format(
          "| %s | %s | %.1f | %.1f | %.1f | %s |",
          store, label, enqueue, wall, cpu, over
        )
      end
    end
  end
end

FlowCostBench.new(ARGV).run if $PROGRAM_NAME == __FILE__

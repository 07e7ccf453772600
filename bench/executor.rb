# frozen_string_literal: true

# The proco benchmarks for Jiggler::Executor: a CPU-bound task and a model of direct I/O on a single disk, each run
# through a plain loop and through every executor configuration of the proco README, printed as bar charts of the
# elapsed time; then the rate at which `submit!` takes items in batch mode.
#
#   bundle exec ruby bench/executor.rb           # about a minute
#   bundle exec ruby bench/executor.rb --quick   # a few seconds, small counts: checks that the harness runs

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "etc"
require "jiggler/executor"

# Runs the workloads and prints the charts.
class ExecutorBench
  QUICK = ARGV.include?("--quick")
  CPU_ITEMS = QUICK ? 40 : 2_000
  IO_ITEMS = QUICK ? 10 : 200
  RATE_ITEMS = QUICK ? 20_000 : 500_000
  BAR = 60

  # Each item costs the same CPU time; batching does not change the total.
  CPU_TASK = ->(_item) { (1..10000).inject(:+) }
  CPU_BATCH_TASK = ->(items) { items.each { (1..10000).inject(:+) } }

  # One disk: writes are exclusive; a write costs a 10 ms seek plus 1 ms per 50 kB item transferred.
  DISK = Thread::Mutex.new
  IO_TASK = ->(_item) { DISK.synchronize { sleep 0.01 + 0.001 } }
  IO_BATCH_TASK = ->(items) {
    DISK.synchronize { sleep 0.01 + items.length * 0.001 }
  }

  def run
    puts "Ruby #{RUBY_VERSION}, #{Etc.nprocessors} CPUs" \
      "#{" (--quick: small counts, figures not meaningful)" if QUICK}"
    chart(
      "CPU-intensive task, #{CPU_ITEMS} items",
      CPU_ITEMS, CPU_TASK, CPU_BATCH_TASK, configurations
    )
    chart(
      "CPU-intensive task, #{CPU_ITEMS} items, " \
        "executor = Jiggler::Executor.batch_size(100)",
      CPU_ITEMS, CPU_TASK, CPU_BATCH_TASK,
      configurations(Jiggler::Executor.batch_size(100), "executor")
    )
    chart(
      "Direct I/O on a single disk, #{IO_ITEMS} items",
      IO_ITEMS, IO_TASK, IO_BATCH_TASK, configurations
    )
    rates
  end

  private

  # The proco README's configurations, as labels and the option builders that make them.
  def configurations(base = Jiggler::Executor, name = "Jiggler::Executor")
    list = [["#{name}.new", base, false]]
    [2, 4, 8].product([1, 4], [false, true]).each do |threads, queues, batch|
      label = "#{name}.threads(#{threads}).queues(#{queues})" \
        "#{".batch(true)" if batch}.new"
      list << [label, base.threads(threads).queues(queues).batch(batch), batch]
    end
    list
  end

  def chart(title, count, task, batch_task, configurations)
    results = [["loop", elapsed { count.times { |item| task.call(item) } }]]
    configurations.each do |label, builder, batch|
      results << [label, elapsed { drive(builder.new, count, batch ? batch_task : task) }]
    end
    print_bars(title, results)
  end

  # Submits every item without waiting, then exits, which returns once all are processed.
  def drive(executor, count, task)
    executor.start(&task)
    count.times { |item| executor.submit!(item) }
    executor.exit
  end

  def print_bars(title, results)
    width = results.map { |label, _| label.length }.max
    longest = results.map(&:last).max
    puts "", "#{title}:", "#{" " * width} : Elapsed time"
    results.each do |label, seconds|
      stars = [(seconds / longest * BAR).round, 1].max
      puts format("%-#{width}s : %-#{BAR}s %.3f s", label, "*" * stars, seconds)
    end
  end

  def rates
    puts "", "submit! throughput, #{RATE_ITEMS} items, block returns items.size:"
    [
      ["Jiggler::Executor.batch(true).new", Jiggler::Executor.batch(true)],
      [
        "Jiggler::Executor.batch(true).queue_size(10_000).new",
        Jiggler::Executor.batch(true).queue_size(10_000)
      ],
      [
        "Jiggler::Executor.threads(4).queues(4).batch(true).new",
        Jiggler::Executor.threads(4).queues(4).batch(true)
      ]
    ].each { |label, builder| rate(label, builder) }
    rate("Jiggler::Executor.new (one item at a time)", Jiggler::Executor, RATE_ITEMS / 10)
  end

  def rate(label, builder, count = RATE_ITEMS)
    executor = builder.new.start { |items| items.size }
    submitted = elapsed { count.times { |item| executor.submit!(item) } }
    total = submitted + elapsed { executor.exit }
    puts format(
      "%-56s : %9d items/s submitted, %9d items/s processed",
      label, count / submitted, count / total
    )
  end

  def elapsed
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    yield
    Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
  end
end

ExecutorBench.new.run

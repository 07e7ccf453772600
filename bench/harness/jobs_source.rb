# frozen_string_literal: true

module Bench
  # Writes the jobs file a processor loads: the same job bodies for all three, behind each one's own mixin and client.
  #
  # Jobs tell the harness when they start and finish without a store call: the first job to start and the last one
  # to finish (each process counts finished jobs) write a marker file (BENCH_DIR/started, BENCH_DIR/finished) holding
  # the CLOCK_MONOTONIC time, which is the same clock in every process of the machine. This costs a flag check, a mutex
  # and an integer add per job.
  module JobsSource
    # Sidekiq's setup, in its own process and inside bench/rails_app alike.
    SIDEKIQ = <<~RUBY
      require "sidekiq"
      require "logger"
      Sidekiq.configure_server { |config| config.logger.level = Logger::WARN }
      Sidekiq.configure_client { |config| config.logger.level = Logger::WARN }
      BENCH_MIXIN = Sidekiq::Job
    RUBY
    HEADERS = {
      ours: <<~RUBY,
        require "jiggler"
        require "logger"
        Jiggler.logger.level = Logger::WARN
        BENCH_MIXIN = Jiggler::Job
        # Enqueues for the harness's agent.
        module BenchClient
          def self.bulk(klass, args) = klass.enqueue_bulk(args)
          def self.one(klass, args) = klass.enqueue(*args)
        end
      RUBY
      jiggler010: <<~RUBY,
        require "jiggler"
        require "logger"
        Jiggler.config.logger.level = Logger::WARN
        Jiggler.config[:mode] = ENV["BENCH_MODE"].to_sym if ENV["BENCH_MODE"]
        BENCH_MIXIN = Jiggler::Job
        # Enqueues for the harness's agent.
        module BenchClient
          def self.bulk(klass, args) = args.each_slice(10_000) { |slice| klass.enqueue_bulk(slice) }
          def self.one(klass, args) = klass.enqueue(*args)
        end
      RUBY
      # Ours inside bench/rails_app (loaded by its initializer): Active Job classes are enqueued with
      # perform_all_later, as an app enqueues many.
      rails: <<~RUBY,
        require "jiggler"
        BENCH_MIXIN = Jiggler::Job
        # Enqueues for the harness's agent.
        module BenchClient
          def self.bulk(klass, args)
            return klass.enqueue_bulk(args) unless klass < ActiveJob::Base
            args.each_slice(10_000) { |slice| ActiveJob.perform_all_later(slice.map { |list| klass.new(*list) }) }
          end

          def self.one(klass, args) = (klass < ActiveJob::Base) ? klass.perform_later(*args) : klass.enqueue(*args)
        end
      RUBY
      sidekiq: SIDEKIQ + <<~RUBY,
        # Enqueues for the harness's agent.
        module BenchClient
          def self.bulk(klass, args) = Sidekiq::Client.push_bulk("class" => klass, "args" => args, "retry" => false)
          def self.one(klass, args) = klass.perform_async(*args)
        end
      RUBY
      # Sidekiq inside bench/rails_app (BENCH_QUEUE_ADAPTER=sidekiq): Active Job classes through Sidekiq's own adapter,
      # enqueued with perform_all_later as ours are (its enqueue_all is one push_bulk per class and queue).
      sidekiq_rails: SIDEKIQ + <<~RUBY
        # Enqueues for the harness's agent.
        module BenchClient
          def self.bulk(klass, args)
            unless klass < ActiveJob::Base
              return Sidekiq::Client.push_bulk("class" => klass, "args" => args, "retry" => false)
            end
            args.each_slice(10_000) do |slice|
              ActiveJob.perform_all_later(slice.map { |list| klass.new(*list) })
            end
          end

          def self.one(klass, args)
            (klass < ActiveJob::Base) ? klass.perform_later(*args) : klass.perform_async(*args)
          end
        end
      RUBY
    }.freeze

    JOBS = <<~RUBY
      require "net/http"

      # Marks the first job's start and, counting finished jobs, the last one's finish.
      module BenchDone
        DIR = ENV.fetch("BENCH_DIR")
        TOTAL = Integer(ENV.fetch("BENCH_JOBS", "0"))
        # Set when several processes share the jobs: each finished job appends a byte to this file, and the append
        # that makes it TOTAL bytes long is the last one (O_APPEND moves the offset to the end atomically).
        COUNTER = ENV["BENCH_COUNTER"]
        LOCK = Thread::Mutex.new
        @count = 0
        @started = false

        # Two threads (or processes) may both see false; the first mark stays.
        def self.started
          return if @started
          @started = true
          mark("started")
        end

        # The last job runs the block (if any) before it marks the finish.
        def self.finished
          count = LOCK.synchronize { COUNTER ? append : @count += 1 }
          return unless count == TOTAL
          yield if block_given?
          mark("finished")
        end

        # Opened on first use, so that each forked process has its own.
        def self.append
          @counter ||= File.open(COUNTER, "a")
          @counter.syswrite(".")
          @counter.sysseek(0, IO::SEEK_CUR)
        end

        def self.mark(name)
          temporary = File.join(DIR, "\#{name}.\#{Process.pid}.tmp")
          File.write(temporary, Process.clock_gettime(Process::CLOCK_MONOTONIC).to_s)
          File.link(temporary, File.join(DIR, name))
        rescue Errno::EEXIST
          nil
        ensure
          File.unlink(temporary)
        end
      end

      class BenchNoopJob
        include BENCH_MIXIN
        def perform
          BenchDone.started
          BenchDone.finished
        end
      end

      class BenchHttpJob
        include BENCH_MIXIN
        def perform(url)
          BenchDone.started
          response = Net::HTTP.get_response(URI(url))
          raise "HTTP \#{response.code}" unless response.is_a?(Net::HTTPSuccess)
          BenchDone.finished
        end
      end

      class BenchFileJob
        include BENCH_MIXIN
        def perform(path, id)
          BenchDone.started
          File.open(path, "a") { |file| file.write("\#{id}\\n") }
          BenchDone.finished
        end
      end

      class BenchFibJob
        include BENCH_MIXIN
        def perform(n)
          BenchDone.started
          fib(n)
          BenchDone.finished
        end

        def fib(n) = (n <= 1) ? 1 : fib(n - 1) + fib(n - 2)
      end

      # Records how long it waited between its enqueue (the argument, CLOCK_MONOTONIC) and its start.
      class BenchLatencyJob
        include BENCH_MIXIN
        def perform(enqueued_at)
          BenchDone.started
          waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - enqueued_at
          File.open(File.join(BenchDone::DIR, "latencies"), "a") { |file| file.write("\#{waited}\\n") }
          BenchDone.finished
        end
      end

      # Keeps in memory how long it waited between its enqueue (the argument, CLOCK_MONOTONIC)
      # and its start; the last job writes them all to BENCH_DIR/lags (a file write per job
      # would weigh on the rates measured).
      class BenchLagJob
        include BENCH_MIXIN
        LAGS = []

        def perform(enqueued_at)
          BenchDone.started
          LAGS << Process.clock_gettime(Process::CLOCK_MONOTONIC) - enqueued_at
          BenchDone.finished { File.write(File.join(BenchDone::DIR, "lags"), LAGS.join("\n")) }
        end
      end

      # Notes its start (CLOCK_MONOTONIC) in BENCH_DIR/starts, shared by every process, then sleeps.
      class BenchSleepJob
        include BENCH_MIXIN
        def perform(seconds)
          BenchDone.started
          File.open(File.join(BenchDone::DIR, "starts"), "a") do |file|
            file.syswrite("\#{Process.clock_gettime(Process::CLOCK_MONOTONIC)}\n")
          end
          sleep seconds
          BenchDone.finished
        end
      end
    RUBY

    module_function

    # @returns [String] the path of the jobs file for `kind` (:ours, :rails, :jiggler010, :sidekiq, :sidekiq_rails),
    #   written into `dir`.
    def write(kind, dir)
      path = File.join(dir, "bench_jobs_#{kind}.rb")
      File.write(
        path,
        "# frozen_string_literal: true\n\n" \
        "# Generated by bench/harness for #{kind}.\n" +
          HEADERS.fetch(kind) + "\n" + JOBS
      )
      path
    end
  end
end

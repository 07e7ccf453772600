# frozen_string_literal: true

require "async"
require_relative "../../jiggler"
require_relative "identity"
require_relative "processor"
require_relative "workers"
require_relative "fetcher"
require_relative "listener"
require_relative "scheduler"
require_relative "batcher"
require_relative "heartbeat"
require_relative "executions"
require_relative "cancellations"
require_relative "reaper"
require_relative "../metrics/recorder"
require_relative "gate"
require_relative "steps"
require_relative "iterations"

module Jiggler
  module Server
    # Owns the lifecycle of one server process: starts the heartbeat, workers, fetcher, listener, scheduler and (when
    # batch classes are loaded) batcher; `quiet` stops fetching; `stop` lets running jobs finish for up to `timeout`
    # seconds, stops the rest and puts every unfinished job back in its queue; `kill` skips the wait.
    class Launcher
      # Seconds allowed for the last acknowledgements and the requeue once the workers are done.
      FINISH_TIMEOUT = 4

      attr_reader :identity

      # @parameter config [Config] frozen settings.
      # @parameter identity [Identity] who the process is (a supervisor chooses its children's).
      def initialize(
        config:, logger: Jiggler.logger, identity: Identity.new(config)
      )
        @config = config
        @logger = logger
        @identity = identity
        @winding_down = false
        # Results are saved through the store that jobs enqueue through, a pool shared by the fibers.
        @client_store = config[:client_redis_pool] ?
          Store.client(config) :
          Store.server(config, size: config[:client_concurrency])
        @metrics = metrics = Metrics::Recorder.new if config[:metrics]
        gate = Gate.new(
          process: @identity.id,
          reliable: config.at_least_once?,
          store: -> { @client_store }
        )
        steps = Steps.new(
          process: @identity.id,
          reliable: config.at_least_once?,
          logger: logger,
          store: -> { @client_store }
        )
        @executions = Executions.new(logger: logger)
        @store = Store.dedicated(config)
        suspects = Suspects.new(
          store: @store, process: @identity.id, reliable: config.at_least_once?
        )
        # Iterable jobs stop between two items once the process is quieting or stopping (`@winding_down`).
        iterations = Iterations.new(
          process: @identity.id,
          reliable: config.at_least_once?,
          store: -> { @client_store },
          stopping: -> { @winding_down },
          logger: logger
        )
        processor = Processor.new(
          logger: logger,
          results: @client_store,
          interrupted: -> { @workers.interrupting? },
          alone: suspects.method(:alone?),
          config: config,
          metrics: metrics,
          gate: gate,
          executions: @executions,
          iterations: iterations,
          steps: steps
        )
        @workers = Workers.new(
          concurrency: config[:concurrency], processor: processor
        )
        @fetcher = Fetcher.new(
          store: @store,
          process: @identity.id,
          config: config,
          workers: @workers,
          suspects: suspects,
          logger: logger
        )
        if config[:poller_enabled]
          @scheduler = Scheduler.new(
            store: Store.dedicated(config),
            interval: config[:poll_interval],
            logger: logger
          )
          @batcher = batcher(config, logger)
          # Moves jobs waiting on slots that expired (LimitedJob's ttl), through the pool the gate takes slots from.
          @limiter = Periodic.new(
            "limiter", interval: config[:poll_interval], logger: logger
          ) { @client_store.promote_expired }
          @cron = cron(config, logger) if config[:recurring].any?
        end
        # Worker fibers count runs without a lock; this hands the counts to the heartbeat thread.
        if metrics
          @hand_over = Periodic.new(
            "metrics",
            interval: Metrics::Recorder::HAND_OVER_INTERVAL,
            logger: logger
          ) { metrics.hand_over }
        end
        @listener = Listener.new(
          store: @store,
          fetcher: @fetcher,
          scheduler: @scheduler,
          logger: logger
        )
        @reaper = Reaper.new(
          store: Store.dedicated(config),
          process: @identity.id,
          config: config,
          logger: logger
        )
        @heartbeat = Heartbeat.new(
          store: Store.dedicated(config),
          identity: @identity,
          workers: @workers,
          interval: config.heartbeat_interval,
          ttl: config.registration_ttl,
          logger: logger,
          metrics: metrics,
          metrics_retention: config[:metrics_retention],
          executions: @executions
        )
        @cancellations = Cancellations.new(
          store: Store.dedicated(config),
          executions: @executions,
          logger: logger
        )
      end

      # Starts every part inside the running reactor.
      # @parameter parent [Async::Task]
      # @raises [Store::ConnectionError] when the store cannot be reached.
      def start(parent: Async::Task.current)
        # Jobs enqueue through the store's pool, shared by the fibers; with `client_redis_pool` through the app's pool,
        # and with `transactional_enqueue` on the app's Active Record connection, in the job's own transaction.
        unless @config[:client_redis_pool]
          store = @config[:transactional_enqueue] ?
            Store.client(@config) :
            @client_store
          Jiggler.client = Client.new(
            store, middleware: @config.client_middleware
          )
        end
        # Connected before the started line, whose description of the store says how it was reached (behind PgBouncer:
        # without startup options), which only a connection tells.
        @store.ping
        @heartbeat.start
        @executions.start(parent: parent)
        @cancellations.start
        @workers.start(parent: parent, reporter: @fetcher)
        # Listening before the first fetch: what is pushed after the fetcher's first look is announced (on SQLite the
        # listener's first wait takes the counters it compares with; the first fetch may run a step whose completion
        # queues its dependants before this call returns).
        @listener.start(parent: parent)
        @fetcher.start(parent: parent)
        @scheduler&.start(parent: parent)
        @batcher&.start(parent: parent)
        @cron&.start(parent: parent)
        @limiter&.start(parent: parent)
        @hand_over&.start(parent: parent)
        @reaper.start(parent: parent)
        @logger.info(started_message)
      end

      # Stops fetching new jobs; running jobs go on and the process stays registered.
      def quiet
        @logger.info("quiet: no new jobs will be fetched")
        @winding_down = true
        @identity.quiet!
        @fetcher.quiet
      end

      # Shuts down: see the class comment. Delivery is at-least-once: a job stopped midway runs again elsewhere.
      # @returns [Boolean] whether every unfinished job is back in its queue (else they wait in flight for a reaper).
      # @asynchronous
      def stop
        @logger.info(
          "stopping: waiting up to #{@config[:timeout]} s for " \
          "#{@workers.current_jobs.size} running jobs"
        )
        @winding_down = true
        @fetcher.quiet
        @listener.stop
        @scheduler&.stop
        @batcher&.stop
        @cron&.stop
        @limiter&.stop
        @hand_over&.stop
        @reaper.stop
        unstarted = @workers.drain
        interrupted = @workers.stop(@config[:timeout])
        stop_cancellations
        # After `kill`, the wait above ends with the jobs it interrupted: count those.
        finish(unstarted, [interrupted, @killed.to_i].max)
      end

      # Whether the process was asked to stop through the store, not by a signal (see Heartbeat).
      def stop_requested? = @heartbeat.stop_requested?

      # Stops the running jobs now (a second TERM or INT during `stop`).
      def kill
        @logger.warn(
          "stopping at once: running jobs are interrupted and go back to " \
          "their queues"
        )
        # Counted first: stopping the jobs resumes `stop`, which logs the count, before this call returns.
        @killed = @workers.current_jobs.size
        @workers.stop(0)
      end

      private

      # After the workers: a job may still be cancelled while the shutdown waits for it.
      def stop_cancellations
        @cancellations.stop
        @executions.stop
      end

      # A batcher when this process loaded batch classes: it checks every half of their shortest batch_interval, and
      # at least every poll_interval.
      # The recurring tasks' loop; loaded (with fugit) only by a server that has tasks.
      def cron(config, logger)
        require_relative "cron"
        Cron.new(
          store: Store.dedicated(config),
          tasks: config[:recurring],
          missed: config[:recurring_missed],
          interval: config[:poll_interval],
          logger: logger,
          middleware: config.client_middleware
        )
      end

      def batcher(config, logger)
        shortest = Job.shortest_batch_interval or return
        Batcher.new(
          store: Store.dedicated(config),
          interval: [shortest / 2.0, config[:poll_interval]].min,
          logger: logger
        )
      end

      def finish(unstarted, interrupted)
        left = Async::Task.current.with_timeout(FINISH_TIMEOUT) do
          @fetcher.stop(FINISH_TIMEOUT)
          return_jobs(unstarted)
        end
        @store.close
        @metrics&.hand_over
        @heartbeat.stop(unregister: left.zero?)
        if left.zero?
          @logger.info(
            "stopped: #{interrupted} jobs interrupted; " \
            "unfinished jobs are back in their queues"
          )
        end
        left.zero?
      rescue => error
        @metrics&.hand_over
        @heartbeat.stop(unregister: false)
        @logger.error(
          "stopped, but unfinished jobs stay in flight until a live " \
          "process's reaper returns them to their queues: " \
          "#{error.class}: #{error.message}"
        )
        false
      end

      # Puts jobs that did not finish back in their queues; returns how many could not be. At least once, a lost
      # connection (the first use of one the store dropped while the process was idle fails) is retried until `finish`
      # gives up: a requeue moves each job once, however often it runs. A push is not retried, since a push whose
      # reply was lost would be made twice.
      def return_jobs(unstarted)
        if @config.at_least_once?
          retrying { @store.requeue(@identity.id) }
          retrying { @store.in_flight_count(@identity.id) }
        else
          unstarted.group_by(&:queue).each do |queue, jobs|
            @store.push(queue, jobs.map(&:payload))
          end
          0
        end
      end

      def retrying
        yield
      rescue Store::ConnectionError => error
        @logger.warn("stopping: #{error.message}; retrying")
        Async::Task.current.sleep(0.1)
        retry
      end

      def started_message
        queues = if @config.weighted?
          "by weight " + @config[:weighted_queues]
            .map { |name, weight| "#{name}(#{weight})" }
            .join(", ")
        else
          @config[:queues]
            .map { |name, priority| "#{name}(#{priority})" }
            .join(", ")
        end
        "jiggler #{VERSION} started: #{@identity.id}, " \
          "concurrency #{@config[:concurrency]}, queues #{queues}, " \
          "#{@config[:mode]}, #{@store.description}"
      end
    end
  end
end

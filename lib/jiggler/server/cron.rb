# frozen_string_literal: true

require "json"
require "async/clock"
require_relative "periodic"
require_relative "../recurring_task"

module Jiggler
  module Server
    # Enqueues recurring tasks on their ticks. Every server runs one and there is no leader: each asks the store to
    # claim the tick and push its job in one atomic step, which succeeds once per tick, so a tick is enqueued exactly
    # once however many servers run (and still when some die). It sleeps until the next tick of any task.
    #
    # Ticks are worked out once per distinct schedule (fugit takes about a millisecond for each), and only for the
    # schedules whose next tick has come: a look with nothing due compares one number per schedule, so thousands of
    # tasks cost next to nothing between their ticks.
    #
    # A tick is claimed only if it is at most LATE seconds old when a server first sees it, so ticks missed while no
    # server ran are skipped; with `recurring_missed: :run_once`, the latest missed tick runs once on return.
    class Cron
      # Seconds a tick may be late and still run: a store outage or a restart this short loses no tick.
      LATE = 60
      # A wall clock that moved this many seconds away from the monotonic clock was changed: every tick is worked
      # out again.
      CLOCK_JUMP = 1.0

      # The tasks that share a schedule, and the first tick after the last look (nil: not worked out yet).
      Beat = Struct.new(:tasks, :next_tick)
      private_constant :Beat

      # @parameter store [Store::Redis | Store::SQLite] a store for this loop alone.
      # @parameter tasks [Hash(String, RecurringTask)]
      # @parameter missed [Symbol] :skip or :run_once.
      # @parameter interval [Numeric] the longest wait between looks, so a changed clock is noticed.
      # @parameter middleware [Middleware::Chain] the client middleware, which every enqueue goes through.
      def initialize(store:, tasks:, missed:, interval:, logger:, middleware:)
        @store = store
        @middleware = middleware
        @tasks = tasks.values
        @beats = @tasks.group_by(&:schedule).values.map do |group|
          Beat.new(group, nil)
        end
        # Each task's job settings, its class's limits and lock included, worked out once: the arguments are fixed.
        @settings = @tasks.to_h do |task|
          [task.name, task.job_settings(Cron.job_options(task))]
        end
        # the last tick each task was looked at for, so that each is asked for once per server
        @seen = {}
        @catch_up = missed == :run_once
        @logger = logger
        @periodic = Periodic.new(
          "cron",
          interval: interval,
          logger: logger,
          closing: @store,
          sooner: true
        ) { tick }
      end

      # The options of a task's job class, when it is loaded (it should be, on a server); the defaults otherwise. An
      # Active Job class gives its queue, its `jiggler_options` and the wrapper that runs it.
      # @raises [Config::InvalidError] when the class is loaded but is not a job.
      def self.job_options(task)
        if Object.const_defined?(task.job)
          job_class = Object.const_get(task.job)
        end
        return Job::Options::DEFAULTS unless job_class
        return job_class.job_options if job_class.respond_to?(:job_options)
        if job_class.respond_to?(:jiggler_recurring_options)
          return job_class.jiggler_recurring_options
        end
        raise Config::InvalidError,
          "recurring task #{task.name.inspect} has class #{task.job}, " \
          "which is neither a Jiggler::Job nor an Active Job class"
      end

      # Records the tasks for the dashboard, then starts the loop.
      # @parameter parent [Async::Task]
      def start(parent:)
        @store.save_recurring(
          @tasks.to_h do |task|
            [task.name, JSON.generate(task.to_h(@settings[task.name]))]
          end
        )
        @periodic.start(parent: parent)
      end

      # Stops after the look in progress, if any, and closes the store.
      # @asynchronous
      def stop = @periodic.stop

      private

      # Enqueues every task whose tick has come. @returns [Float] seconds until the next tick of any task.
      def tick
        now = Time.now.to_f
        forget_ticks if clock_changed?(now)
        @beats.each do |beat|
          look(beat, now) if beat.next_tick.nil? || beat.next_tick <= now
        end
        @beats.map(&:next_tick).min - Time.now.to_f
      end

      # Claims the due tick for each of the beat's tasks, then moves the beat to its next tick; a claim that fails
      # leaves it due, so the next look asks again (each task at most once per tick, by @seen).
      def look(beat, now)
        due, following = ticks(beat.tasks.first, beat.next_tick, now)
        beat.tasks.each { |task| claim(task, due, now) } if due
        beat.next_tick = following
      end

      # @returns [Array(Integer | Nil, Integer)] the tick to claim (nil: none may run) and the first tick after now.
      def ticks(task, known, now)
        if known
          following = task.tick_after(known)
          # the usual case: woken at the tick, one fugit call
          return [known, following] if following > now
        elsif !@catch_up
          first = task.tick_after(now - LATE - 1)
          # no tick recent enough to run: one fugit call at boot
          return [nil, first] if first > now
        end
        [task.tick_at_or_before(now), task.tick_after(now)]
      end

      def clock_changed?(now)
        offset = now - Async::Clock.now
        changed = @offset && (offset - @offset).abs > CLOCK_JUMP
        @offset = offset
        changed
      end

      def forget_ticks = @beats.each { |beat| beat.next_tick = nil }

      def claim(task, tick, now)
        return if @seen[task.name]&.>=(tick)
        if now - tick <= LATE || (@catch_up && !@seen.key?(task.name))
          enqueued = task.enqueue(
            @store,
            @settings[task.name],
            tick,
            middleware: @middleware,
            now: now
          )
          if enqueued
            @logger.debug do
              "cron: #{task.name} enqueued for #{Time.at(tick)}"
            end
          end
          # A unique class's job still queued or running holds the lock: the tick is claimed, its run skipped.
          if enqueued.nil?
            @logger.info do
              "cron: #{task.name} skipped #{Time.at(tick)}: " \
              "its unique job is still queued or running"
            end
          end
        end
        # after the store answered: a failed claim is asked again on the next look
        @seen[task.name] = tick
      end
    end
  end
end

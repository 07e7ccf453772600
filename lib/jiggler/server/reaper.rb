# frozen_string_literal: true

require_relative "periodic"
require_relative "failure"
require_relative "../job_rules"
require_relative "../unique_job"
require_relative "../limited_job"
require_relative "../handlers"

module Jiggler
  module Server
    # Finds processes that died (their registration expired without a goodbye: kill -9, OOM, a lost
    # host) and puts the jobs they held in flight back at the head of their queues. JobRules.death
    # decides what the death means for each: a crash when the process held it alone, else suspicion
    # (it runs alone next time); a job with `max_crashes` crashes is probably what kills its
    # process, so it goes to the dead set instead, giving back its unique lock and its concurrency
    # slot at once (not when their ttl ends), as a job that dies running does. Every live process
    # runs a reaper; the store moves each job exactly once, whoever gets there first.
    #
    # A supervisor (`jiggler -p N`) sees a child die at once and calls `recover` for it then, with
    # the same rules; the reapers of live processes still find what a whole machine that died held,
    # and whatever a recovery left behind.
    class Reaper
      # Recorded on a job that was running alone in too many processes that died.
      class PoisonJobError < Error; end

      # @parameter store [Store::Redis | Store::SQLite] a store for this reaper alone.
      # @parameter process [String] this process's id: never reaped by itself.
      # @parameter config [Config]
      def initialize(store:, process:, config:, logger:)
        @store = store
        @process = process
        @interval = config.reaper_interval
        @grace = config.registration_ttl + config.heartbeat_interval
        @max_crashes = config[:max_crashes]
        @dead_timeout = config[:dead_timeout]
        @dead_max = config[:dead_max_jobs]
        @logger = logger
        @handlers = Handlers.new(config, logger)
        # Jitter keeps the reapers of many processes from checking in step.
        @periodic = Periodic.new(
          "reaper",
          interval: config.reaper_interval,
          logger: logger,
          jitter: 0.2,
          closing: @store
        ) { reap }
      end

      # @parameter parent [Async::Task]
      def start(parent:) = @periodic.start(parent: parent)

      # Stops after the check in progress, if any, and closes the store.
      # @asynchronous
      def stop = @periodic.stop

      # Recovers the jobs of every dead process once.
      # @returns [Integer] how many jobs went back to their queues or to the dead set.
      def reap
        dead = @store.dead_processes - [@process]
        return 0 unless registrations_trusted?
        dead.sum { |process| recover(process).tap { @store.forget(process) } }
      end

      # Recovers the jobs a process held in flight, now: back to their queues, or to the dead set,
      # as JobRules.death says. Each job moves at most once, however many recoveries and reapers
      # race for it. The process stays in the registry: a reaper forgets it once its registration
      # has expired, and takes what it may still have been given.
      # @parameter process [String] the id of a process known to be dead.
      # @returns [Integer] how many jobs this call moved.
      # @raises [Store::ConnectionError] when the store cannot be reached.
      def recover(process)
        death = JobRules.death(@store.in_flight(process), @max_crashes)
        killed = bury(process, death)
        back = death.requeued.any? ? @store.requeue(process, death.requeued) : 0
        # Reapers of several processes may race for the same jobs; each reports only what it moved.
        log(process, back, killed) if (back + killed).positive?
        back + killed
      end

      private

      # While the store is unreachable nobody can beat, so every registration may expire without its process dying.
      # After losing touch with the store (or being stalled) for more than two checks, wait one registration's life
      # before believing an expiry again: live processes beat again meanwhile.
      def registrations_trusted?
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        if @last_contact && now - @last_contact > 2 * @interval
          @trusted_from = now + @grace
        end
        @last_contact = now
        now >= (@trusted_from ||= now)
      end

      # Sends the poisoned and unreadable jobs of a death to the dead set.
      # @returns [Integer] how many this call moved.
      def bury(process, death)
        now = Time.now.to_f
        dead = death.poisoned.map { |fetched, job|
          [Failure.kill(fetched, job, error = poison_error(job), now), error]
        } + death.unreadable.map { |fetched, error|
          [Failure.malformed(fetched, error, now), error]
        }
        return 0 if dead.empty?
        killed = @store.fail(process, dead.map(&:first), reliable: true,
          dead_cutoff: now - @dead_timeout, dead_max: @dead_max)
        if killed.positive?
          free(death.poisoned)
          tell_death_handlers(dead)
        end
        killed
      end

      # Releases what poison jobs hold: a dead job never runs again. A lock held until the job started is released too,
      # as the job may have died before it started. Each store step frees only what that jid holds, so a lock or slot
      # another job took since is left alone, and freeing twice (reapers racing) changes nothing.
      def free(poisoned)
        poisoned.each do |_fetched, job|
          UniqueJob.release(@store, job, :deleted) if job["unique"]
          LimitedJob.release(@store, job)
        rescue => error
          @logger.error(
            "reaper: #{job["name"]} jid=#{job["jid"]} went to the dead set, " \
            "but its lock or slot could not be freed (their ttl will): " \
            "#{error.message}"
          )
        end
      end

      # Death handlers hear of every job that reaches the dead set, these too. (When reapers race, the one that moved
      # any of them tells of all: a handler may hear of a job twice, never not at all.)
      # @parameter dead [Array([Store::Failed, Exception])]
      def tell_death_handlers(dead)
        dead.each do |failed, error|
          @handlers.died(Payload.parse(failed.payload), error)
        end
      end

      def poison_error(job)
        PoisonJobError.new(
          "#{job["name"]} was running in #{job["crashes"]} processes that " \
          "died; it may be what kills them, so it is not run again"
        )
      end

      def log(process, requeued, poisoned)
        @logger.warn(
          "reaper: process #{process} died; " \
          "#{requeued} of its jobs are back in their queues" +
          (poisoned.positive? ? ", #{poisoned} went to the dead set" : "")
        )
      end
    end
  end
end

# frozen_string_literal: true

require_relative "periodic"
require_relative "failure"
require_relative "../store/fetched"
require_relative "../payload"

module Jiggler
  module Server
    # Finds processes that died (their registration expired without a goodbye: kill -9, OOM, a lost host) and puts
    # the jobs they held in flight back at the head of their queues. Each such delivery counts as a crash on the job;
    # a job in flight at `max_crashes` deaths is probably what kills its process, so it goes to the dead set instead.
    # Every live process runs a reaper; the store moves each job exactly once, whoever gets there first.
    class Reaper
      # Recorded on a job that was in flight in too many processes that died.
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
        # Jitter keeps the reapers of many processes from checking in step.
        @periodic = Periodic.new("reaper", interval: config.reaper_interval, logger: logger, jitter: 0.2, closing: @store) { reap }
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
        dead.sum { |process| recover(process) }
      end

      private

      # While the store is unreachable nobody can beat, so every registration may expire without its process dying.
      # After losing touch with the store (or being stalled) for more than two checks, wait one registration's life
      # before believing an expiry again: live processes beat again meanwhile.
      def registrations_trusted?
        now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        @trusted_from = now + @grace if @last_contact && now - @last_contact > 2 * @interval
        @last_contact = now
        now >= (@trusted_from ||= now)
      end

      def recover(process)
        poisoned, requeued = sort(@store.in_flight(process))
        killed = poisoned.any? ? @store.fail(process, poisoned, reliable: true, dead_cutoff: Time.now.to_f - @dead_timeout, dead_max: @dead_max) : 0
        back = requeued.any? ? @store.requeue(process, requeued) : 0
        @store.forget(process)
        # Reapers of several processes may race for the same jobs; each reports only what it moved.
        log(process, back, killed) if (back + killed).positive?
        back + killed
      end

      # Splits a dead process's jobs into failure records for the dead set and replacement payloads to requeue.
      def sort(held)
        now = Time.now.to_f
        poisoned = []
        requeued = []
        held.each do |fetched|
          job = Payload.load(fetched.payload)
          job["crashes"] = JobRules.count(job["crashes"]) + 1
          if job["crashes"] >= @max_crashes
            poisoned << Failure.kill(fetched, job, poison_error(job), now)
          else
            requeued << Store::Fetched.new(fetched.handle, fetched.queue, Payload.dump(job))
          end
        rescue => error # unreadable, or a payload whose fields jiggler cannot use
          poisoned << Failure.malformed(fetched, error, now)
        end
        [poisoned, requeued]
      end

      def poison_error(job)
        PoisonJobError.new("#{job["name"]} was running in #{job["crashes"]} processes that died; it may be what kills " \
          "them, so it is not run again")
      end

      def log(process, requeued, poisoned)
        @logger.warn("reaper: process #{process} died; #{requeued} of its jobs are back in their queues" +
          (poisoned.positive? ? ", #{poisoned} went to the dead set" : ""))
      end
    end
  end
end

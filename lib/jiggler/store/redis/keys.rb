# frozen_string_literal: true

module Jiggler
  module Store
    class Redis
      # The names of every key in a namespace. All share the hash tag `{namespace}`, so one script may touch any of
      # them on Redis Cluster.
      class Keys
        SETS = %i[scheduled retry dead].freeze
        COUNTERS = %i[processed failures].freeze

        attr_reader :namespace, :queues, :scheduled, :retry, :dead, :processed,
          :failures, :processes, :wake, :schedule_wake, :paused, :batches

        def initialize(namespace)
          @namespace = namespace
          @prefix = "{#{namespace}}:"
          @queues = "#{@prefix}queues"
          @scheduled = "#{@prefix}scheduled"
          @retry = "#{@prefix}retry"
          @dead = "#{@prefix}dead"
          @processed = "#{@prefix}stats:processed"
          @failures = "#{@prefix}stats:failures"
          @processes = "#{@prefix}processes"
          @wake = "#{@prefix}wake"
          @schedule_wake = "#{@prefix}wake:schedule"
          @paused = "#{@prefix}paused"
          @batches = "#{@prefix}batches"
        end

        # The sorted set of recent cancel requests, and the channel announcing them.
        def cancels = "#{@prefix}cancels"

        def cancel_wake = "#{@prefix}wake:cancel"

        # The list holding a queue's jobs.
        def queue(name) = "#{@prefix}queue:#{name}"

        # The hash of jobs a process holds in flight.
        def in_flight(process) = "#{@prefix}in_flight:#{process}"

        # The sorted set of a batch's waiting items, scored by enqueue time. `batches` holds the names.
        def batch(name) = "#{@prefix}batch:#{name}"

        # The name of the batch of class `klass` waiting for `queue`.
        def batch_name(queue, klass) = "#{queue}|#{klass}"

        # The sorted set of scheduled jobs, retries or dead jobs.
        # @parameter set [Symbol] :scheduled, :retry or :dead.
        # @raises [ArgumentError] for any other name.
        def set(set)
          unless SETS.include?(set)
            raise ArgumentError,
              "unknown set #{set.inspect}; use one of #{SETS}"
          end
          public_send(set)
        end

        # The key of the processed or failures counter.
        # @raises [ArgumentError] for any other name.
        def counter(counter)
          unless COUNTERS.include?(counter)
            raise ArgumentError,
              "unknown counter #{counter.inspect}; use one of #{COUNTERS}"
          end
          public_send(counter)
        end

        # The key holding a finished job's stored result.
        def result(jid) = "#{@prefix}result:#{jid}"

        # The key holding a live process's description.
        def process(id) = "#{@prefix}process:#{id}"

        # The key of a unique job's lock.
        def unique(lock) = "#{@prefix}unique:#{lock}"

        # The sorted set of every lock key, by expiry (ms): taking a lock adds it, releasing one removes it.
        def unique_index = "#{@prefix}unique-index"

        # A key of concurrency and rate limits: `part` alone ("keys", "counts", "index"), or `part` of one limit key
        # ("slots", "waiting", "starts", "plan").
        def limit(part, key = nil)
          key ? "#{@prefix}limit:#{part}:#{key}" : "#{@prefix}limit:#{part}"
        end

        # A key of recurring tasks: "tasks", "ticks", "runs" or "disabled".
        def recurring(part) = "#{@prefix}recurring:#{part}"

        # The hash of a workflow's steps: their dependants, the waiting ones' payloads and counts, which are done,
        # their results, and how many are left.
        def workflow(id) = "#{@prefix}workflow:#{id}"

        # The sorted set of workflow ids, by when their state expires (+inf while they run): clear_all's index.
        def workflows = "#{@prefix}workflows"

        # A key of per-class metrics: a minute's hash, "minutes" or "total".
        def metrics(suffix) = "#{@prefix}metrics:#{suffix}"
      end
    end
  end
end

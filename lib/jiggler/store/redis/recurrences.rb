# frozen_string_literal: true

require_relative "script"

module Jiggler
  module Store
    class Redis
      # Recurring tasks in Redis (see ../contract.md, "Recurring tasks"): three hashes keyed by task name (their
      # settings as JSON, the last tick claimed, the last run time) and a set of disabled tasks. A tick is claimed
      # and its job pushed in one script, so each tick is enqueued once however many servers ask.
      module Recurrences
        RECURRING = Script.new("recurring", parts: %w[lock])
        private_constant :RECURRING

        # Records the tasks servers run, for the dashboard; tasks no longer named are dropped (their state stays).
        # @parameter definitions [Hash(String, String)] task name => its settings as JSON.
        def save_recurring(definitions)
          with do |redis|
            redis.multi do |transaction|
              transaction.call("DEL", @keys.recurring("tasks"))
              if definitions.any?
                transaction.call(
                  "HSET",
                  @keys.recurring("tasks"),
                  *definitions.flatten
                )
              end
            end
          end
        end

        # The recorded tasks. @returns [Array([String, String, Float | Nil, Boolean])] name, settings JSON, last run
        # time and whether enabled, by name.
        def recurring_tasks
          definitions, runs, disabled = with do |redis|
            redis.pipelined do |pipeline|
              %w[tasks runs].each do |part|
                pipeline.call("HGETALL", @keys.recurring(part))
              end
              pipeline.call("SMEMBERS", @keys.recurring("disabled"))
            end
          end
          definitions.sort.map do |name, json|
            [name, json, runs[name]&.to_f, !disabled.include?(name)]
          end
        end

        # Claims a task's tick and pushes its job, in one step; a unique job takes its lock in that step too.
        # @parameter tick [Integer] epoch seconds; nil runs the job now, whatever the tick and the task's state.
        # @parameter unique [Array(String, String, Numeric) | Nil] a unique job's lock name, jid and ttl (seconds).
        # @returns [Boolean | Nil] whether the job was pushed: false when the task is disabled or the tick already
        #   claimed; nil when the tick was claimed but another job holds the lock.
        def enqueue_recurring(
          task,
          tick,
          queue,
          payload,
          now: Time.now.to_f,
          unique: nil
        )
          keys = [
            @keys.recurring("ticks"),
            @keys.recurring("runs"),
            @keys.recurring("disabled"),
            @keys.queue(queue),
            @keys.queues
          ]
          argv = [task, tick.to_s, now, queue, @keys.wake, payload]
          if unique
            lock, jid, ttl = unique
            keys.push(@keys.unique(lock), @keys.unique_index)
            argv.push(jid, (ttl * 1000).ceil)
          end
          {1 => true, 2 => nil}.fetch(
            with { |redis| RECURRING.call(redis, keys, argv) },
            false
          )
        end

        # Turns a task's ticks on or off for every server.
        def enable_recurring(task, enabled)
          with do |redis|
            redis.call(
              enabled ? "SREM" : "SADD",
              @keys.recurring("disabled"),
              task
            )
          end
        end

        # Deletes the tasks' claimed ticks, last runs and switches (part of Store::Redis#clear_all). The tasks' settings
        # stay: servers record them only when they start, and still run them.
        def clear_recurrences
          with do |redis|
            redis.call(
              "DEL",
              *%w[ticks runs disabled].map { |part| @keys.recurring(part) }
            )
          end
        end
      end
    end
  end
end

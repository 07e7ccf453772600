# frozen_string_literal: true

require "securerandom"
require_relative "payload"

module Jiggler
  # A job's payload as a Hash of String keys: its field list, the builders every enqueue goes through, and the
  # changes its life makes to it (a failure, a death, a crash). The changes return new Hashes and leave the one given
  # alone. Payload is the JSON coder these Hashes are stored with.
  module JobPayload
    # Every field jiggler writes, by the keyword `fields` and `changed` take. Fields a middleware adds are carried as
    # they are.
    FIELDS = {
      # Every job's, in the order they are stored; jid and args come first for the client's fast path.
      jid: "jid",
      args: "args",
      name: "name",
      queue: "queue",
      retries: "retries",
      created_at: "created_at",
      # Set by the job's class, how it was enqueued, or the store's moves.
      retry_queue: "retry_queue",
      timeout: "timeout",
      batch_item: "batch_item",
      limits: "limits",
      unique: "unique",
      wrapper: "wrapper",
      active_job: "active_job",
      recurring: "recurring",
      workflow: "workflow",
      after: "after",
      on_complete: "on_complete",
      jids: "jids",
      enqueued_at: "enqueued_at",
      # The time a job built to run later runs at, taken off before it is stored.
      at: "at",
      # Its life: failures, deaths, crashes, stops.
      attempt: "attempt",
      error_class: "error_class",
      error_message: "error_message",
      error_backtrace: "error_backtrace",
      failed_at: "failed_at",
      retried_at: "retried_at",
      died_at: "died_at",
      crashes: "crashes",
      deaths_beside: "deaths_beside",
      suspect: "suspect",
      raw: "raw",
      cancelled: "cancelled",
      snoozes: "snoozes",
      interruptions: "interruptions",
      cursor: "cursor"
    }.freeze

    # Marks a scheduled item of a batch class: when due, it joins its batch, not its queue.
    BATCH_ITEM = FIELDS[:batch_item]
    # Marks a suspect: a job whose next death must be its own, so it runs only alone in its process.
    SUSPECT = FIELDS[:suspect]
    # Counts a job's deaths beside other jobs, pinned on none yet.
    DEATHS_BESIDE = FIELDS[:deaths_beside]
    BACKTRACE_LINES = 20
    MESSAGE_LIMIT = 2_000

    module_function

    # The fields of a new job but its jid and args, in the order they are stored; nil ones are left out. Every job
    # gets name, queue, retries and created_at; the others come with a class's options or a kind of job. (Keywords
    # set one by one: this runs for every enqueue call and every Active Job job.)
    # @returns [Hash]
    def fields(
      name:,
      queue:,
      retries: nil,
      created_at: nil,
      retry_queue: nil,
      timeout: nil,
      batch_item: nil,
      limits: nil,
      unique: nil,
      wrapper: nil,
      active_job: nil,
      recurring: nil,
      jids: nil,
      raw: nil,
      enqueued_at: nil,
      at: nil
    )
      fields = {"name" => name, "queue" => queue}
      fields["retries"] = retries unless retries.nil?
      fields["created_at"] = created_at unless created_at.nil?
      fields["retry_queue"] = retry_queue unless retry_queue.nil?
      fields["timeout"] = timeout unless timeout.nil?
      fields[BATCH_ITEM] = batch_item unless batch_item.nil?
      fields["limits"] = limits unless limits.nil?
      fields["unique"] = unique unless unique.nil?
      fields["wrapper"] = wrapper unless wrapper.nil?
      fields["active_job"] = active_job unless active_job.nil?
      fields["recurring"] = recurring unless recurring.nil?
      fields["jids"] = jids unless jids.nil?
      fields["raw"] = raw unless raw.nil?
      fields["enqueued_at"] = enqueued_at unless enqueued_at.nil?
      fields["at"] = at unless at.nil?
      fields
    end

    # A new job's payload: its jid and args first, then `fields`.
    # @parameter fields [Hash] from `fields`.
    # @returns [Hash]
    def job(args, fields, jid: new_jid)
      {"jid" => jid, "args" => args}.merge!(fields)
    end

    # The JSON of many jobs sharing `fields`, written once and spliced after each job's jid and args: the client's
    # fast path, with no Hash per job.
    # @parameter jids [Array(String)] ids that need no JSON escaping (the client's are hex digits).
    # @parameter args_list [Array(Array)] JSON-native argument lists.
    # @parameter fields [Hash] from `fields`.
    # @returns [Array(String)]
    def dump_all(jids, args_list, fields)
      rest = Payload.dump(fields).delete_prefix("{")
      jids.each_with_index.map do |jid, index|
        %({"jid":"#{jid}","args":#{Payload.dump(args_list[index])},#{rest})
      end
    end

    # A copy of `job` with the fields given set, and those given as nil removed.
    # @returns [Hash]
    def changed(job, **fields)
      fields.each_with_object(job.dup) do |(key, value), copy|
        value.nil? ? copy.delete(field(key)) : copy[field(key)] = value
      end
    end

    # A job as it goes to its queue at `now`: stamped, without the time it was scheduled for.
    def enqueued(job, now)
      job = job.except("at")
      job["enqueued_at"] = now
      job
    end

    # A job that failed with `error`, as attempt number `attempt`.
    def failed(job, error, attempt, now)
      changed(
        job,
        attempt: attempt,
        error_class: error.class.name,
        error_message: utf8(message(error))[0, MESSAGE_LIMIT],
        error_backtrace: (error.backtrace || [])
          .first(BACKTRACE_LINES)
          .map { |line| utf8(line) },
        failed_at: job["failed_at"] || now,
        retried_at: (attempt > 1) ? now : job["retried_at"]
      )
    end

    # A job stamped with the time it went to the dead set.
    def died(job, now) = changed(job, died_at: now)

    # A job cancelled (Jiggler.cancel) by `by`: not a failure.
    def cancelled(job, by, now)
      changed(job, cancelled: {"by" => by, "at" => now})
    end

    # A job that snoozed (Job#snooze) once more.
    def snoozed(job) = changed(job, snoozes: count(job["snoozes"]) + 1)

    # An iterable job that stopped for a shutdown once more, to run again from its cursor.
    def interrupted(job)
      changed(job, interruptions: count(job["interruptions"]) + 1)
    end

    # A job whose process died: the crash is pinned on it when it was held `alone`, with the deaths beside other jobs
    # it was held in, which that explains; else one more death beside others is counted.
    def crashed(job, alone:)
      unless alone
        return changed(job, deaths_beside: count(job[DEATHS_BESIDE]) + 1)
      end
      changed(
        job,
        crashes: count(job["crashes"]) + 1 + count(job[DEATHS_BESIDE]),
        deaths_beside: nil
      )
    end

    # A job marked to run only alone.
    def suspected(job) = changed(job, suspect: true)

    # A job cleared of suspicion: it failed with an error running alone, so it does not kill its process.
    def cleared(job) = changed(job, suspect: nil, deaths_beside: nil)

    # An iterable job (Jiggler::Iteration) that saved a cursor past the one it started from, cleared of its crashes
    # and suspicion: the deaths it was held in did not stop it from moving on, so they are not evidence that it kills
    # its process. A job that kills its process at one item never saves a cursor past it, and still ends in the dead
    # set after `max_crashes` deliveries.
    def progressed(job)
      changed(job, crashes: nil, suspect: nil, deaths_beside: nil)
    end

    # The dead-set job of a payload that cannot be read at all: the error, and the raw text.
    # @parameter queue [String] where it was found.
    def unreadable(payload, queue, error, now)
      unreadable = job(
        [], fields(name: "(unreadable)", queue: queue, raw: utf8(payload))
      )
      died(failed(unreadable, error, 1, now), now)
    end

    # A counter field's value; anything but an Integer (a hand-edited or foreign payload) counts as 0.
    def count(value) = value.is_a?(Integer) ? value : 0

    def new_jid = SecureRandom.hex(12)

    # @raises [ArgumentError] for a field not in FIELDS.
    def field(key)
      FIELDS.fetch(key) do
        raise ArgumentError,
          "#{key.inspect} is not a job payload field (JobPayload::FIELDS)"
      end
    end

    # An error's message; a job's own exception class may fail to build one.
    def message(error)
      error.message
    # a broken message must not stop the worker
    rescue Exception => problem # rubocop:disable Lint/RescueException
      "(#{error.class}#message raised #{problem.class})"
    end

    # Text as valid UTF-8: binary strings are read as UTF-8, other encodings converted; bad bytes become U+FFFD.
    def utf8(text)
      text = text.to_s
      if text.encoding == Encoding::BINARY
        return text.dup.force_encoding(Encoding::UTF_8).scrub
      end
      text.encode(Encoding::UTF_8, invalid: :replace, undef: :replace)
    end
  end
end

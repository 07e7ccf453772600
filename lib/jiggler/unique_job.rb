# frozen_string_literal: true

require "digest/sha2"
require "securerandom"
require_relative "error"
require_relative "payload"
require_relative "job_payload"
require_relative "limited_job"

module Jiggler
  # Unique jobs: a class with `job_options unique: {...}` has at most one job per lock key at a time. The key is the
  # class and its arguments (or what `key:` computes from them); the lock is taken and the job written in one atomic
  # store step, so two processes enqueueing the same job at once make one job. On a conflict the enqueue writes nothing
  # and returns nil (or raises ConflictError with `on_conflict: :raise`).
  #
  #   job_options unique: {until: :finished, key: ->(account_id, _) { account_id }, ttl: 600}
  #
  # `until: :started` releases the lock when a server takes the job to run it (so "while queued" and "until started"
  # are one point here); `until: :finished` (the default) when it succeeds or dies, not when it fails and waits for a
  # retry. Deleting or killing it from the dashboard releases it too. A job whose process was killed goes back to its
  # queue with its lock, and releases it when it finishes elsewhere. `ttl` (seconds, default 3600, at most a year:
  # LimitedJob::SECONDS_MAX) is a safety net: the lock expires then whatever happened, so a job lost for good never
  # blocks its key for longer.
  module UniqueJob
    # Raised by an enqueue of a job whose lock is taken, when the class sets `on_conflict: :raise`.
    class ConflictError < Error; end

    UNTIL = %i[started finished].freeze
    ON_CONFLICT = %i[skip raise].freeze
    DEFAULTS = {
      until: :finished,
      ttl: 3600,
      on_conflict: :skip,
      key: nil
    }.freeze

    module_function

    # Checks and completes the option's value.
    # @parameter value [true | Hash] until:, key: (a Proc taking the arguments), ttl:, on_conflict:.
    # @returns [Hash] frozen.
    # @raises [ArgumentError] naming what is wrong.
    def options(value)
      value = {} if value == true
      unless value.is_a?(Hash)
        raise ArgumentError,
          "unique must be true or a Hash of until:, key:, ttl:, on_conflict: " \
          "(got #{value.inspect})"
      end
      # Read as the limits' options are: known keys, a key Proc, a finite ttl.
      options = LimitedJob.read(:unique, value, DEFAULTS)
      check!(:until, options[:until], UNTIL)
      check!(:on_conflict, options[:on_conflict], ON_CONFLICT)
      LimitedJob.seconds!(:unique, :ttl, options[:ttl])
      options.freeze
    end

    # Writes the jobs whose locks are free, each with its lock, in one atomic step per job.
    # @parameter store [Store::Redis | Store::SQLite]
    # @parameter jobs [Array(Hash)] payload Hashes as Client#build makes them ("at" for a job to run later).
    # @parameter options [Hash] the class's options, with unique:.
    # @returns [Array(String | Nil)] each job's id, nil where its lock was taken.
    # @raises [ConflictError] on the first conflict, with on_conflict: :raise.
    def write(store, jobs, options)
      unique = options[:unique]
      now = Time.now.to_f
      jobs.map do |job|
        at = job["at"]
        # A job may come with its lock (an Active Job job's key reads its arguments before serialization).
        lock = job.dig("unique", "lock") ||
          lock_key(job["name"], job["args"], unique)
        written = JobPayload.changed(
          job,
          at: nil,
          enqueued_at: (now unless at),
          unique: {"lock" => lock, "until" => unique[:until].to_s}
        )
        if store.enqueue_unique(
          lock,
          job["jid"],
          unique[:ttl],
          queue: job["queue"],
          payload: Payload.dump(written),
          at: at
        )
          next job["jid"]
        end
        if unique[:on_conflict] == :raise
          raise ConflictError,
            "#{job["name"]} is already enqueued with lock #{lock}"
        end
      end
    end

    # The lock's name: the class, and the user's key or a digest of the arguments.
    def lock_key(name, args, unique)
      key = unique[:key] ?
        unique[:key].call(*args).to_s :
        Digest::SHA256.hexdigest(Payload.dump(args))
      "#{name}:#{key}"
    end

    # Releases a job's lock at the given point of its life, if the job holds it until then.
    # @parameter job [Hash] a parsed payload with a "unique" field.
    # @parameter point [Symbol] :started, :finished (succeeded or died) or :deleted.
    # @returns [Boolean] whether a lock was released.
    def release(store, job, point)
      unique = job["unique"]
      return false unless unique.is_a?(Hash) && releases_at?(unique, point)
      store.unlock(unique["lock"].to_s, job["jid"].to_s)
    end

    # Runs a block that deletes jobs (or sends them to the dead set) from the dashboard, then releases the locks of
    # those of them that were unique jobs, when the block removed them all. When it removed fewer (a server fetched
    # one, or the scheduler queued it, since they were read) the locks stay: which job is still there is unknown, and
    # a lock freed under a live job would let its duplicate in; the job's run, or the lock's ttl, frees them.
    # @parameter payloads [Array(String)] the jobs' payloads, read before the block runs.
    # @returns [Object] what the block returns: true or how many it removed.
    def released(store, payloads)
      result = yield
      return result unless result == true || result == payloads.size
      payloads.each do |payload|
        job = Payload.load(payload)
        release(store, job, :deleted) if job["unique"]
      rescue Payload::MalformedError
        nil # not a job: it holds no lock
      end
      result
    end

    # A job held until it starts releases at :started, one held until it finishes at :finished; any at :deleted.
    def releases_at?(unique, point)
      point == :deleted || unique["until"] == point.to_s
    end

    def check!(name, value, allowed)
      return if allowed.include?(value)
      raise ArgumentError,
        "unique #{name} must be one of #{allowed.map(&:inspect).join(", ")} " \
        "(got #{value.inspect})"
    end
  end
end

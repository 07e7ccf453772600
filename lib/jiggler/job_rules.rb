# frozen_string_literal: true

require_relative "payload"
require_relative "job_payload"
require_relative "store/fetched"

module Jiggler
  # The decisions about jobs, made once, above the store: where a due job goes, what an unreadable payload becomes, how
  # a killed job is stamped, and what the death of a process means for the jobs it held (the poison verdict); what
  # each decision changes on a job is JobPayload's. The stores make none of these decisions; the methods that need one
  # take it as a block (see lib/jiggler/store/contract.md) and move what it returns, atomically. Where a failed job
  # goes (retry, with its delay, or dead) is Server::Failure's.
  module JobRules
    # The queue of a job whose payload names none, or cannot be read.
    DEFAULT_QUEUE = "default"
    # Deaths beside other jobs after which a job runs only alone. Most deaths are the host's doing (an OOM kill, a
    # kill -9 at deploy, a lost machine), so after the first the jobs run again side by side; a job that was there
    # at a second death is suspected.
    DEATHS_BESIDE_BEFORE_ALONE = 2

    # Where a due entry goes: to `queue` as `payload`, or, for a scheduled batch item, into the batch of class
    # `batch` waiting for `queue`.
    Destination = Struct.new(:queue, :payload, :batch)

    # What a process's death means for the jobs it held: `requeued`, Store::Fetched jobs to put back with their new
    # payloads; `poisoned`, [Store::Fetched, parsed job] pairs for the dead set; `unreadable`, [Store::Fetched, error]
    # pairs for the dead set too.
    Death = Struct.new(:requeued, :poisoned, :unreadable)

    module_function

    # Where a due entry of the scheduled, retry or dead set goes (the dead set's when the dashboard runs it again).
    # Scheduled jobs go to `queue`, scheduled batch items to their batch; retries and dead jobs run again as they ran,
    # in `retry_queue` when they have one, else `queue`. An unreadable payload goes to the default queue as it is:
    # the worker that cannot read it sends it to the dead set with the reason.
    # @parameter from [Symbol] :scheduled, :retry or :dead.
    # @parameter payload [String]
    # @parameter now [Float] epoch seconds, the job's new `enqueued_at`.
    # @returns [Destination]
    def due(from, payload, now)
      job = Payload.load(payload)
      queue = ((from != :scheduled) && job["retry_queue"]) ||
        job["queue"] ||
        DEFAULT_QUEUE
      batch = job["name"] if from == :scheduled && batch_item?(job)
      Destination.new(queue, Payload.dump(JobPayload.enqueued(job, now)), batch)
    rescue Payload::MalformedError
      Destination.new(DEFAULT_QUEUE, payload, nil)
    end

    # Decides what the death of a process means for the jobs it held in flight (docs/reliability.md, "Jobs that kill
    # their process"). A process that held several jobs says nothing certain of any (which one ran what killed it
    # is unknown, and some had not started), so none gets a crash: the death is noted on each as one beside others.
    # A process that held one job pins the crash on it, and with it every death beside others it was held in, which
    # it now explains. A job with `max_crashes` crashes is poisoned: it goes to the dead set. Innocent work is not
    # serialized by one death: the jobs run again side by side, and a job becomes a suspect, to run alone, only at
    # its second death beside others, or when its next death would poison it (see `suspect_from_now?`). So a killer
    # still dies alone, after exactly `max_crashes` deliveries, and a job that never dies alone never gets a crash.
    # (Knowing which jobs had started would take a store write before each job, which the per-job budget does not
    # allow.)
    # @parameter held [Array(Store::Fetched)] what the process held.
    # @returns [Death]
    def death(held, max_crashes)
      held.each_with_object(Death.new([], [], [])) do |fetched, death|
        job = JobPayload.crashed(
          Payload.load(fetched.payload),
          alone: held.size == 1
        )
        job = JobPayload.suspected(job) if suspect_from_now?(job, max_crashes)
        if JobPayload.count(job["crashes"]) >= max_crashes
          death.poisoned << [fetched, job]
        else
          death.requeued << Store::Fetched.new(
            fetched.handle, fetched.queue, Payload.dump(job)
          )
        end
      rescue => error # unreadable, or a payload whose fields jiggler cannot use
        death.unreadable << [fetched, error]
      end
    end

    # Whether a job that died runs only alone from now on: it was already a suspect, it has died beside others
    # DEATHS_BESIDE_BEFORE_ALONE times, or its next death would poison it, which must then be its own for the killer
    # to end in the dead set after exactly `max_crashes` deliveries.
    def suspect_from_now?(job, max_crashes)
      beside = JobPayload.count(job[JobPayload::DEATHS_BESIDE])
      deaths = JobPayload.count(job["crashes"]) + beside
      suspect?(job) ||
        beside >= DEATHS_BESIDE_BEFORE_ALONE ||
        deaths >= max_crashes - 1
    end

    # Whether a parsed payload is a suspect: it runs only alone in its process (Server::Fetcher), so that a death
    # while it runs is pinned on it.
    def suspect?(job) = job[JobPayload::SUSPECT] == true

    # Whether a parsed payload is a scheduled item to put in its batch when due.
    def batch_item?(job) = job[JobPayload::BATCH_ITEM] == true

    # A job moved to the dead set by hand, stamped with the time it died.
    # @returns [String] its payload; an unreadable one as it was.
    def killed(payload, now)
      Payload.dump(JobPayload.died(Payload.load(payload), now))
    rescue Payload::MalformedError
      payload
    end

    # The dead-set payload of a payload that cannot be read at all (JobPayload.unreadable).
    # @parameter queue [String] where it was found.
    # @returns [String]
    def unreadable(payload, queue, error, now)
      Payload.dump(JobPayload.unreadable(payload, queue, error, now))
    end
  end
end

# frozen_string_literal: true

require_relative "../fetched"

module Jiggler
  module Store
    class Postgres
      # The queue path of the PostgreSQL store (see ../contract.md): a job is one row whose state
      # says where it is, its id is the handle of a Fetched, and each move is one short transaction.
      # A fetch is one call of the schema's `fetch` function: the acknowledged rows are deleted and
      # counted, and queued rows claimed with SKIP LOCKED, in one round trip that commits at once.
      module QueuePath
        # A job this process holds, found by its id alone: written with IS NOT DISTINCT FROM, which
        # no index answers, so the planner cannot combine the primary key with the index of in-flight
        # rows. Under a long transaction that index keeps an entry for every row that was ever in
        # flight for the owner, and reading them all (a BitmapAnd) made each acknowledgement
        # slower than the last.
        HELD_BY = "state IS NOT DISTINCT FROM 'in_flight' " \
          "AND owner IS NOT DISTINCT FROM"
        IN_FLIGHT = "SELECT id, queue, payload FROM @.jobs " \
          "WHERE owner = $1 AND state = 'in_flight' ORDER BY run_at, id"
        PUSH = "WITH added AS " \
          "(INSERT INTO @.jobs (state, queue, run_at, payload) " \
          "SELECT 'queued', $1, $2, p " \
          "FROM unnest($3::bytea[]) WITH ORDINALITY AS r(p, n) " \
          "ORDER BY n RETURNING 1) " \
          "SELECT pg_notify($4, 'queues')::text " \
          "WHERE EXISTS (SELECT 1 FROM added)"
        # The earliest due time is read in the statement's snapshot, before its own rows; the queue
        # is known when due.
        SCHEDULE = "WITH earliest AS (SELECT min(run_at) AS at FROM @.jobs " \
          "WHERE state IN ('scheduled', 'retry')), " \
          "added AS (INSERT INTO @.jobs (state, run_at, payload) " \
          "SELECT 'scheduled', t, p " \
          "FROM unnest($1::float8[], $2::bytea[]) " \
          "WITH ORDINALITY AS r(t, p, n) " \
          "ORDER BY n RETURNING 1) " \
          "SELECT pg_notify($3, 'schedule')::text FROM earliest " \
          "WHERE earliest.at IS NULL OR $4 < earliest.at"
        FETCH = "SELECT f_id, f_queue, f_payload, f_run_at " \
          "FROM @.fetch($1, $2::text[], $3, $4::bigint[], " \
          "$5, $6::float8[], $7::bigint[])"
        REQUEUE = "UPDATE @.jobs SET state = 'queued', owner = NULL, " \
          "payload = coalesce($1, payload) WHERE id = $2 AND #{HELD_BY} $3"
        FAIL = "UPDATE @.jobs SET state = $1, run_at = $2, payload = $3, " \
          "owner = NULL WHERE id = $4 AND #{HELD_BY} $5"
        CHECKPOINT =
          "UPDATE @.jobs SET payload = $1 WHERE id = $2 AND #{HELD_BY} $3"
        # A claim starts after the last row this process claimed in the queue (its mark) for this
        # long after a claim from the queue's start (a rescan), which finds what the marks passed
        # over: jobs requeued by a reaper, and pushes whose transaction committed after a younger
        # row was claimed. Longer when a rescan is slow (dead index entries a long transaction keeps),
        # so rescans take about 1/RESCAN_SHARE of the time at most.
        RESCAN_EVERY = 0.5
        RESCAN_SHARE = 20
        VACUUM_EVERY = 5
        private_constant :IN_FLIGHT, :PUSH, :SCHEDULE, :FETCH, :REQUEUE, :FAIL,
          :CHECKPOINT, :RESCAN_EVERY, :RESCAN_SHARE, :VACUUM_EVERY

        # Appends jobs to a queue, waking idle servers once committed: one statement (one round
        # trip) for up to CHUNK jobs.
        def push(queue, payloads)
          return if payloads.empty?
          now = Time.now.to_f
          if payloads.size <= CHUNK
            return with do
              @db.query(PUSH, [queue, now, bytes(payloads), @channel])
            end
          end
          write do
            insert("queued", payloads.map { |payload| [queue, now, payload] })
            announce("queues")
          end
        end

        # Adds jobs to the scheduled set, announcing them when one is due sooner than every other:
        # one statement.
        # @parameter entries [Array([Float, String])] run-at time and payload.
        def schedule(entries)
          return if entries.empty?
          entries.each_slice(CHUNK) do |slice|
            times, payloads = slice.transpose
            with do
              @db.query(
                SCHEDULE,
                [times, bytes(payloads), @channel, times.min]
              )
            end
          end
        end

        # Acknowledges finished jobs and takes up to `limit` new ones, highest priority queue first;
        # paused queues are skipped.
        # @returns [Array(Fetched)] handles are row ids.
        def fetch(process, queues, limit:, acks: [], reliable: true)
          started = monotonic
          @marks ||= {}
          rescan = !@rescan_at || started >= @rescan_at
          # a rescan sent now sees every commit announced so far: the rescans they were owed are paid
          @rescan_owed = false if rescan
          after = queues.map { |queue| (!rescan && @marks[queue]) || [] }
          rows = with do
            @db.query(
              FETCH,
              [
                process,
                queues,
                limit,
                acks,
                reliable,
                after.map(&:first),
                after.map(&:last)
              ]
            )
          end
          # a queue it found empty keeps its mark: nothing waited before it
          if rescan
            took = monotonic - started
            @rescan_soonest = started + took * RESCAN_SHARE
            @rescan_at = [@rescan_soonest, started + RESCAN_EVERY].max
          end
          rows.map do |id, queue, payload, run_at|
            @marks[queue] = [run_at, id]
            Fetched.new(id, queue, payload)
          end
        end

        # Moves failed jobs out of flight into the retry or the dead set, and counts the failures; a
        # snoozed job goes to the scheduled set (announced) and a cancelled one to the dead set,
        # neither counted as a failure.
        # @parameter failures [Array(Failed)]
        # @returns [Integer] how many moved (a job no longer in flight is skipped).
        def fail(process, failures, reliable:, dead_cutoff:, dead_max:)
          write do
            moved = failures.select do |failed|
              fail_one(process, failed, reliable)
            end
            failed = moved.count(&:failure?)
            count("failures", failed) if failed.positive?
            announce("schedule") if moved.any? { |job| job.set == :scheduled }
            trim_dead(dead_cutoff, dead_max) if failures.any?(&:dead?)
            moved.size
          end
        end

        # Puts jobs a process holds in flight back at the head of their queues, each exactly once.
        # @parameter jobs [Array(Fetched) | Nil] each with the payload to push; nil: all the process
        #   holds.
        def requeue(process, jobs = nil)
          write do
            jobs ||= in_flight(process)
            moved = jobs.sum do |job|
              @db.change(REQUEUE, [@db.bytes(job.payload), job.handle, process])
            end
            announce("queues") if moved.positive?
            moved
          end
        end

        # The jobs a process holds in flight. @returns [Array(Fetched)]
        def in_flight(process)
          rows = with { @db.query(IN_FLIGHT, [process]) }
          rows.map { |id, queue, payload| Fetched.new(id, queue, payload) }
        end

        def in_flight_count(process)
          with do
            @db.value(
              "SELECT count(*) FROM @.jobs " \
              "WHERE owner = $1 AND state = 'in_flight'",
              [process]
            )
          end
        end

        # Rewrites the payload of a job `process` holds in flight (an iterable job's checkpoint), only while it holds
        # it: one statement; what a reaper or a requeue moves from then on carries that payload.
        # @parameter handle [Integer] the job's row id.
        # @returns [Boolean] false when the job is no longer in flight for `process`.
        def checkpoint(process, handle, payload)
          with do
            @db.change(CHECKPOINT, [@db.bytes(payload), handle, process])
          end == 1
        end

        # When the earliest scheduled job or retry is due. @returns [Float | Nil] epoch seconds.
        def next_due = with { earliest_due }

        # Moves due scheduled jobs and retries where the block says, and prunes what expired.
        # @yields {|from, payload| ...} :scheduled or :retry, and the entry; returns its
        #   JobRules::Destination.
        # @returns [Integer] how many moved.
        def enqueue_due(now, &destination)
          vacuum_jobs
          write do
            due = @db.query("SELECT id, state, payload FROM @.jobs " \
              "WHERE state IN ('scheduled', 'retry') AND run_at <= $1 " \
              "ORDER BY run_at, id FOR UPDATE SKIP LOCKED", [now])
            due.each do |id, state, payload|
              enqueue_one(id, state.to_sym, payload, now, &destination)
            end
            announce("queues") if due.any?
            prune(now)
            due.size
          end
        end

        private

        # VACUUMs the jobs table at most every VACUUM_EVERY seconds (the scheduler's check calls it
        # in each server): every job leaves two dead row versions (its claim and its acknowledgement),
        # tens of thousands a second under load, more than autovacuum removes at its defaults (it
        # looks at a database once a minute), and a table whose dead rows wait that long grows by
        # hundreds of megabytes. VACUUM makes their space reusable (and gives back empty pages at
        # the table's end); SKIP_LOCKED: when another server vacuums it, this one does not wait.
        # Best effort: a failure waits for the next turn. Not through an application's connection
        # (Postgres.on), which may be in a transaction.
        def vacuum_jobs
          return unless @db.url
          clock = monotonic
          return if @vacuumed_at && clock - @vacuumed_at < VACUUM_EVERY
          @vacuumed_at = clock
          with { @db.run("VACUUM (SKIP_LOCKED) @.jobs") }
        rescue ConnectionError
          nil
        end

        # Another process announced work: it may sit behind the marks (requeued, or pushed in a
        # transaction that committed late), so the next fetch rescans, as soon as rescans stay
        # within their share of the time. Until then the announcement is owed a rescan: the fetch
        # it prompts may come sooner, find nothing past the marks and leave the server idle, so
        # wait_for_wake announces the queues again when the rescan may run (owed_rescan_in).
        def rescan_soon
          if @rescan_at && @rescan_soonest && @rescan_soonest < @rescan_at
            @rescan_at = @rescan_soonest
          end
          @rescan_owed = true if @rescan_at && @rescan_at > monotonic
        end

        # Seconds until the rescan owed to an announcement may run (0: it may now); nil when none
        # is owed (a fetch that rescans pays it). Owed only once a fetch set @rescan_at.
        def owed_rescan_in
          [@rescan_at - monotonic, 0].max if @rescan_owed
        end

        # Whether the owed rescan may run now: then it is no longer owed (announced once).
        def pay_owed_rescan
          return false unless owed_rescan_in&.zero?
          @rescan_owed = false
          true
        end

        def monotonic = Process.clock_gettime(Process::CLOCK_MONOTONIC)

        def bytes(payloads) = payloads.map { |payload| @db.bytes(payload) }

        def fail_one(process, failed, reliable)
          set = failed.state
          unless reliable
            return insert(
              set,
              [[failed.fetched.queue, failed.at, failed.payload]]
            ).any?
          end
          values = [
            set,
            failed.at,
            @db.bytes(failed.payload),
            failed.fetched.handle,
            process
          ]
          @db.change(FAIL, values) == 1
        end
      end
    end
  end
end

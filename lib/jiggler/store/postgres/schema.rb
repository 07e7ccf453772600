# frozen_string_literal: true

module Jiggler
  module Store
    class Postgres
      # The tables of a PostgreSQL store, made in its schema at first use (in one transaction, under
      # a transaction advisory lock, so servers starting together make them once). A job is one row
      # of `jobs` whose state says where it is (queued, in_flight with its owner, scheduled, retry,
      # dead, batching, waiting); a finished job's row is deleted when it is acknowledged, so the
      # table holds the work to do and the sets, nothing done.
      #
      # Each place has a partial index of its own, so a claim reads a few index pages of queued rows
      # whatever else the table holds, and `fetch` is one function call: one round trip, one short
      # transaction.
      module Schema
        VERSION = 8

        TABLES = <<~SQL
          CREATE TABLE IF NOT EXISTS @.jobs (id bigserial PRIMARY KEY, state text NOT NULL,
            queue text, batch text, run_at float8 NOT NULL, owner text, waiting_key text,
            payload bytea NOT NULL);
          CREATE INDEX IF NOT EXISTS jobs_queued ON @.jobs (queue, run_at, id)
            WHERE state = 'queued';
          CREATE INDEX IF NOT EXISTS jobs_in_flight ON @.jobs (owner) WHERE state = 'in_flight';
          CREATE INDEX IF NOT EXISTS jobs_sets ON @.jobs (state, run_at, id)
            WHERE state IN ('scheduled', 'retry', 'dead');
          CREATE INDEX IF NOT EXISTS jobs_batching ON @.jobs (queue, batch, run_at, id)
            WHERE state = 'batching';
          CREATE INDEX IF NOT EXISTS jobs_waiting ON @.jobs (waiting_key, run_at, id)
            WHERE state = 'waiting';
          CREATE TABLE IF NOT EXISTS @.counters (name text PRIMARY KEY, value bigint NOT NULL);
          CREATE TABLE IF NOT EXISTS @.processes (id text PRIMARY KEY, info text NOT NULL,
            expires_at float8 NOT NULL);
          CREATE TABLE IF NOT EXISTS @.paused_queues (queue text PRIMARY KEY);
          CREATE TABLE IF NOT EXISTS @.results (jid text PRIMARY KEY, value text NOT NULL,
            expires_at float8 NOT NULL);
          CREATE TABLE IF NOT EXISTS @.process_signals (id bigserial PRIMARY KEY,
            process text NOT NULL, signal text NOT NULL, at float8 NOT NULL);
          CREATE TABLE IF NOT EXISTS @.metrics (minute bigint, class text, field text,
            value bigint NOT NULL, PRIMARY KEY (minute, class, field));
          CREATE TABLE IF NOT EXISTS @.recurring_tasks (name text PRIMARY KEY, definition text,
            tick bigint, last_run float8, disabled boolean NOT NULL DEFAULT false);
          CREATE TABLE IF NOT EXISTS @.unique_locks (lock text PRIMARY KEY, jid text NOT NULL,
            expires_at float8 NOT NULL);
          CREATE TABLE IF NOT EXISTS @.limit_slots (key text, jid text, expires_at float8 NOT NULL,
            PRIMARY KEY (key, jid));
          CREATE TABLE IF NOT EXISTS @.limit_keys (key text PRIMARY KEY, max integer NOT NULL,
            ttl float8 NOT NULL);
          CREATE TABLE IF NOT EXISTS @.rate_starts (key text, member text, at float8 NOT NULL,
            PRIMARY KEY (key, member));
          CREATE TABLE IF NOT EXISTS @.rate_plan (key text, member text, at float8 NOT NULL,
            PRIMARY KEY (key, member));
          CREATE TABLE IF NOT EXISTS @.cancel_requests (id bigserial PRIMARY KEY, jid text NOT NULL,
            requested_by text, at float8 NOT NULL);
          CREATE INDEX IF NOT EXISTS cancel_requests_at ON @.cancel_requests (at);
          CREATE TABLE IF NOT EXISTS @.schema_version (version integer NOT NULL);
          CREATE TABLE IF NOT EXISTS @.workflow_steps (workflow text, jid text, queue text NOT NULL,
            waiting integer NOT NULL, payload bytea, dependants text[] NOT NULL,
            done boolean NOT NULL DEFAULT false, result text, PRIMARY KEY (workflow, jid));
          CREATE INDEX IF NOT EXISTS workflow_steps_waiting ON @.workflow_steps (jid) WHERE waiting > 0;
          CREATE TABLE IF NOT EXISTS @.workflows (id text PRIMARY KEY, steps_left integer NOT NULL,
            expires_at float8, died boolean NOT NULL DEFAULT false, death_queue text, death_payload bytea);
          ALTER TABLE @.workflow_steps ADD COLUMN IF NOT EXISTS callbacks text[] NOT NULL DEFAULT '{}',
            ADD COLUMN IF NOT EXISTS ended boolean NOT NULL DEFAULT false,
            ADD COLUMN IF NOT EXISTS dead boolean NOT NULL DEFAULT false,
            ADD COLUMN IF NOT EXISTS members_left integer NOT NULL DEFAULT 0;
        SQL

        # A payload as JSON, or NULL when it is not JSON (a store reads payloads only to find
        # entries by jid or class). Payloads are bytes (bytea): a store keeps whatever it is given,
        # even bytes that are not UTF-8 text.
        JSON = <<~SQL
          CREATE OR REPLACE FUNCTION @.json(payload bytea) RETURNS jsonb
          LANGUAGE plpgsql IMMUTABLE AS $$
          BEGIN
            RETURN convert_from(payload, 'UTF8')::jsonb;
          EXCEPTION WHEN others THEN
            RETURN NULL;
          END $$;
        SQL

        # Acknowledges, then claims up to `wanted` queued jobs, queue by queue in priority order,
        # skipping paused queues and rows other claims hold (SKIP LOCKED), oldest first: each
        # queue's claim reads its partial index. A queue's claim starts after its mark (`marks_at`
        # and `mark_ids`, the run_at and id of the last row this process claimed there; NULL: from
        # the start), so it does not walk the index entries of the rows claimed before: while a long
        # transaction keeps those rows from being vacuumed (or their entries from being marked dead),
        # a scan from the start would read them all on every claim. Each row claimed comes back with
        # its run_at, for the next mark.
        FETCH = <<~SQL
          CREATE OR REPLACE FUNCTION @.fetch(process text, queues text[], wanted integer,
            acks bigint[], reliable boolean, marks_at float8[], mark_ids bigint[])
          RETURNS TABLE (f_id bigint, f_queue text, f_payload bytea, f_run_at float8)
          LANGUAGE plpgsql AS $$
          DECLARE
            q text;
            i integer;
            after_at float8;
            after_id bigint;
            taken integer;
            acked integer := coalesce(cardinality(acks), 0);
          BEGIN
            IF acked > 0 AND reliable THEN
              DELETE FROM @.jobs j
                WHERE j.id = ANY(acks) AND j.state IS NOT DISTINCT FROM 'in_flight'
                  AND j.owner IS NOT DISTINCT FROM process;
              GET DIAGNOSTICS acked = ROW_COUNT;
            END IF;
            IF acked > 0 THEN
              INSERT INTO @.counters AS c (name, value) VALUES ('processed', acked)
                ON CONFLICT (name) DO UPDATE SET value = c.value + excluded.value;
            END IF;
            FOR i IN 1 .. coalesce(cardinality(queues), 0) LOOP
              EXIT WHEN wanted <= 0;
              q := queues[i];
              CONTINUE WHEN EXISTS (SELECT 1 FROM @.paused_queues p WHERE p.queue = q);
              after_at := coalesce(marks_at[i], '-infinity'::float8);
              after_id := coalesce(mark_ids[i], 0);
              IF reliable THEN
                RETURN QUERY WITH picked AS (SELECT j.id, j.run_at FROM @.jobs j
                  WHERE j.state = 'queued' AND j.queue = q AND (j.run_at, j.id) > (after_at, after_id)
                  ORDER BY j.run_at, j.id LIMIT wanted FOR UPDATE SKIP LOCKED),
                moved AS (UPDATE @.jobs j SET state = 'in_flight', owner = process FROM picked
                  WHERE j.id = picked.id RETURNING j.id, j.queue, j.payload, picked.run_at)
                SELECT m.id, m.queue, m.payload, m.run_at FROM moved m ORDER BY m.run_at, m.id;
              ELSE
                RETURN QUERY WITH picked AS (SELECT j.id, j.run_at FROM @.jobs j
                  WHERE j.state = 'queued' AND j.queue = q AND (j.run_at, j.id) > (after_at, after_id)
                  ORDER BY j.run_at, j.id LIMIT wanted FOR UPDATE SKIP LOCKED),
                gone AS (DELETE FROM @.jobs j USING picked WHERE j.id = picked.id
                  RETURNING j.id, j.queue, j.payload, picked.run_at)
                SELECT g.id, g.queue, g.payload, g.run_at FROM gone g ORDER BY g.run_at, g.id;
              END IF;
              GET DIAGNOSTICS taken = ROW_COUNT;
              wanted := wanted - taken;
            END LOOP;
          END $$;
        SQL

        # A rate limit's gate (Rates#acquire_rate) in one call, under the key's transaction advisory
        # lock, on the database's clock: records a start when the budget allows ('run'), else makes
        # the job a scheduled job due when it does ('wait', with the time), or finds it no longer in
        # flight ('gone').
        RATE = <<~SQL
          CREATE OR REPLACE FUNCTION @.acquire_rate(lock_name text, rate_key text, quota integer,
            period float8, jid text, process text, handle bigint, job bytea,
            reliable boolean, channel text)
          RETURNS TABLE (outcome text, due float8) LANGUAGE plpgsql AS $$
          DECLARE
            reservation text := 'r:' || jid;
            waited float8;
            earliest float8;
            clock float8;
            start_member text;
          BEGIN
            PERFORM pg_advisory_xact_lock(hashtextextended(lock_name, 0));
            -- The time once the lock is held: a time read before waiting for it would record starts
            -- out of order, and let a later caller forget a start that happened less than a period ago.
            clock := extract(epoch FROM clock_timestamp());
            start_member := jid || ':' || clock::text;
            DELETE FROM @.rate_starts s WHERE s.key = rate_key AND s.at <= clock - period;
            DELETE FROM @.rate_plan p WHERE p.key = rate_key AND p.at <= clock - 2 * period;
            SELECT p.at INTO waited FROM @.rate_plan p
              WHERE p.key = rate_key AND p.member = reservation;
            IF (SELECT count(*) FROM @.rate_starts s WHERE s.key = rate_key) < quota THEN
              DELETE FROM @.rate_plan p WHERE p.key = rate_key AND p.member = reservation;
              -- Timed as late as the step can: a start recorded early lets the window forget it early.
              clock := extract(epoch FROM clock_timestamp());
              INSERT INTO @.rate_starts AS s (key, member, at) VALUES (rate_key, start_member, clock)
                ON CONFLICT (key, member) DO UPDATE SET at = excluded.at;
              INSERT INTO @.rate_plan AS p (key, member, at) VALUES (rate_key, start_member, clock)
                ON CONFLICT (key, member) DO UPDATE SET at = excluded.at;
              RETURN QUERY SELECT 'run'::text, clock;
              RETURN;
            END IF;
            IF waited IS NOT NULL THEN
              due := (SELECT min(s.at) FROM @.rate_starts s WHERE s.key = rate_key) + period;
            ELSE
              due := greatest(clock, coalesce((SELECT p.at FROM @.rate_plan p WHERE p.key = rate_key
                ORDER BY p.at DESC LIMIT 1 OFFSET quota - 1), clock) + period);
            END IF;
            earliest := (SELECT min(j.run_at) FROM @.jobs j WHERE j.state IN ('scheduled', 'retry'));
            IF reliable THEN
              UPDATE @.jobs j SET state = 'scheduled', owner = NULL, queue = NULL, run_at = due
                WHERE j.id = handle AND j.state IS NOT DISTINCT FROM 'in_flight'
                  AND j.owner IS NOT DISTINCT FROM process;
              IF NOT FOUND THEN
                RETURN QUERY SELECT 'gone'::text, NULL::float8;
                RETURN;
              END IF;
            ELSE
              INSERT INTO @.jobs (state, run_at, payload) VALUES ('scheduled', due, job);
            END IF;
            IF earliest IS NULL OR due < earliest THEN
              PERFORM pg_notify(channel, 'schedule');
            END IF;
            INSERT INTO @.rate_plan AS p (key, member, at) VALUES (rate_key, reservation, due)
              ON CONFLICT (key, member) DO UPDATE SET at = excluded.at;
            RETURN QUERY SELECT 'wait'::text, due;
          END $$;
        SQL

        # Completes a workflow step with its acknowledgement, once per jid (Workflows#complete_step), in one call:
        # under the workflow's transaction advisory lock, the delivery leaves flight (counted as processed), the step
        # is marked done with its result and ends (unless it ended before: died, or blocked by a dead dependency),
        # and each dependant or on_complete callback whose last dependency or member it was becomes a queued job.
        # Returns whether this call completed the step.
        WORKFLOW_STEP = <<~SQL
          CREATE OR REPLACE FUNCTION @.complete_step(process text, handle bigint, reliable boolean, wf text,
            step text, step_result text, now_at float8, retention float8, channel text, lock_name text)
          RETURNS boolean LANGUAGE plpgsql AS $$
          DECLARE
            acked integer := 0;
            completed boolean;
            deps text[];
            callbacks text[];
            released bigint;
          BEGIN
            PERFORM pg_advisory_xact_lock(hashtextextended(lock_name, 0));
            IF reliable THEN
              DELETE FROM @.jobs j WHERE j.id = handle AND j.state = 'in_flight' AND j.owner = process;
              GET DIAGNOSTICS acked = ROW_COUNT;
            END IF;
            -- Done and ended in one row version; its end counts for its on_complete callbacks once (a dead step
            -- retried and done had ended at its death). The workflow's lock keeps the row as `was` read it.
            UPDATE @.workflow_steps s SET done = true, result = step_result, ended = true
              FROM (SELECT o.ended FROM @.workflow_steps o WHERE o.workflow = wf AND o.jid = step) AS was
              WHERE s.workflow = wf AND s.jid = step AND NOT s.done
              RETURNING s.dependants, CASE WHEN was.ended THEN NULL ELSE s.callbacks END INTO deps, callbacks;
            completed := FOUND;
            IF acked > 0 OR (completed AND NOT reliable) THEN
              INSERT INTO @.counters AS c (name, value) VALUES ('processed', 1)
                ON CONFLICT (name) DO UPDATE SET value = c.value + 1;
            END IF;
            IF NOT completed THEN
              RETURN false;
            END IF;
            -- Nested: SQL's AND may evaluate both sides, and array_fill refuses the NULL length of no list.
            IF cardinality(callbacks) > 0 THEN
              IF @.release_callbacks(wf, callbacks, array_fill(1, ARRAY[cardinality(callbacks)]), now_at) > 0 THEN
                PERFORM pg_notify(channel, 'queues');
              END IF;
            END IF;
            WITH ready AS (UPDATE @.workflow_steps s SET waiting = s.waiting - 1
                WHERE s.workflow = wf AND s.jid = ANY(deps) AND s.waiting > 0
                RETURNING s.jid, s.waiting, s.queue, s.payload),
              queued AS (INSERT INTO @.jobs (state, queue, run_at, payload)
                SELECT 'queued', r.queue, now_at, r.payload FROM ready r WHERE r.waiting = 0 ORDER BY r.jid
                RETURNING 1)
            SELECT count(*) INTO released FROM queued;
            IF released > 0 THEN
              -- The payloads now live in the jobs' rows.
              UPDATE @.workflow_steps s SET payload = NULL
                WHERE s.workflow = wf AND s.jid = ANY(deps) AND s.waiting = 0 AND s.payload IS NOT NULL;
              PERFORM pg_notify(channel, 'queues');
            END IF;
            UPDATE @.workflows w SET steps_left = w.steps_left - 1,
              expires_at = CASE WHEN w.steps_left = 1 THEN now_at + retention END WHERE w.id = wf;
            RETURN true;
          END $$;
        SQL

        # Records a workflow step's death (Workflows#step_died), in one call under the workflow's transaction advisory
        # lock: the step ends, and so does each step that waits for it, directly or not (blocked); each on_complete
        # callback whose last member they were becomes a queued job. The workflow's first death queues its on_death
        # callback, if any. A step the workflow does not hold, or one done, changes nothing. Returns whether this was
        # the workflow's first death.
        WORKFLOW_DEATH = <<~SQL
          CREATE OR REPLACE FUNCTION @.step_died(wf text, step text, now_at float8, channel text, lock_name text)
          RETURNS boolean LANGUAGE plpgsql AS $$
          DECLARE
            targets text[];
            counts integer[];
            first_death boolean;
            death_q text;
            death_p bytea;
          BEGIN
            PERFORM pg_advisory_xact_lock(hashtextextended(lock_name, 0));
            UPDATE @.workflow_steps s SET dead = true WHERE s.workflow = wf AND s.jid = step AND NOT s.done;
            IF NOT FOUND THEN
              RETURN false;
            END IF;
            -- A step ended before had its dependants ended with it: the walk stops there.
            WITH RECURSIVE reach(jid) AS (SELECT step
                UNION SELECT unnest(s.dependants) FROM @.workflow_steps s
                  JOIN reach r ON s.workflow = wf AND s.jid = r.jid
                  WHERE r.jid = step OR NOT s.ended),
              ended AS (UPDATE @.workflow_steps s SET ended = true FROM reach r
                WHERE s.workflow = wf AND s.jid = r.jid AND NOT s.ended RETURNING s.callbacks)
            SELECT array_agg(m.jid), array_agg(m.n) INTO targets, counts
              FROM (SELECT c.jid, count(*)::integer AS n FROM ended e, unnest(e.callbacks) AS c(jid) GROUP BY c.jid) m;
            IF targets IS NOT NULL THEN
              IF @.release_callbacks(wf, targets, counts, now_at) > 0 THEN
                PERFORM pg_notify(channel, 'queues');
              END IF;
            END IF;
            UPDATE @.workflows w SET died = true WHERE w.id = wf AND NOT w.died
              RETURNING w.death_queue, w.death_payload INTO death_q, death_p;
            first_death := FOUND;
            IF death_p IS NOT NULL THEN
              INSERT INTO @.jobs (state, queue, run_at, payload) VALUES ('queued', death_q, now_at, death_p);
              PERFORM pg_notify(channel, 'queues');
            END IF;
            RETURN first_death;
          END $$;
        SQL

        # Counts members' ends for on_complete callbacks (`counts[i]` more for `targets[i]`) and queues each callback
        # left with none; returns how many. A callback counts down `members_left`, which no index covers, so these
        # updates of one row, thousands per workflow, stay HOT; its `waiting` (which the index of waiting steps covers)
        # is set once, at its release.
        WORKFLOW_CALLBACKS = <<~SQL
          CREATE OR REPLACE FUNCTION @.release_callbacks(wf text, targets text[], counts integer[], now_at float8)
          RETURNS bigint LANGUAGE plpgsql AS $$
          DECLARE
            released bigint;
          BEGIN
            -- ANY(targets), not a join with unnest: a lookup of the key per callback, never a scan of the table.
            WITH ready AS (UPDATE @.workflow_steps s
                SET members_left = s.members_left - counts[array_position(targets, s.jid)]
                WHERE s.workflow = wf AND s.jid = ANY(targets) AND s.members_left > 0
                RETURNING s.jid, s.members_left, s.queue, s.payload),
              queued AS (INSERT INTO @.jobs (state, queue, run_at, payload)
                SELECT 'queued', r.queue, now_at, r.payload FROM ready r WHERE r.members_left = 0 ORDER BY r.jid
                RETURNING 1)
            SELECT count(*) INTO released FROM queued;
            IF released > 0 THEN
              -- The payloads now live in the jobs' rows.
              UPDATE @.workflow_steps s SET payload = NULL, waiting = 0
                WHERE s.workflow = wf AND s.jid = ANY(targets) AND s.members_left = 0 AND s.waiting > 0;
            END IF;
            RETURN released;
          END $$;
        SQL

        module_function

        # Makes the tables unless they exist at this version.
        # @parameter db [Connection]
        def ensure(db)
          attempts = 0
          begin
            return if current?(db)
            db.transaction do
              db.query(
                "SELECT 1 FROM pg_advisory_xact_lock(hashtext($1))",
                ["jiggler:#{db.schema}"]
              )
              next if current?(db) # made meanwhile by another process
              db.query(
                "CREATE SCHEMA IF NOT EXISTS " \
                "#{PG::Connection.quote_ident(db.schema)}"
              )
              [
                TABLES,
                JSON,
                FETCH,
                RATE,
                WORKFLOW_STEP,
                WORKFLOW_DEATH,
                WORKFLOW_CALLBACKS
              ].each { |sql| db.run(sql) }
              db.query("DELETE FROM @.schema_version")
              db.query(
                "INSERT INTO @.schema_version (version) VALUES ($1)",
                [VERSION]
              )
            end
          rescue ConnectionError => error
            # A transaction that waited for the lock may still read the catalog as it was when it began (an advisory
            # lock does not refresh it), miss the schema another process just made, and collide with it: a new
            # transaction sees it.
            raise unless error.cause.is_a?(PG::UniqueViolation) &&
              (attempts += 1) < 3
            retry
          end
        end

        def current?(db)
          table = "#{PG::Connection.quote_ident(db.schema)}.schema_version"
          return false unless db.value(
            "SELECT to_regclass($1) IS NOT NULL",
            [table]
          )
          db.value("SELECT max(version) FROM @.schema_version") == VERSION
        end
      end
    end
  end
end

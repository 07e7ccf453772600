# frozen_string_literal: true

require_relative "../../sqlite_file"

module Jiggler
  module Store
    class SQLite
      # The store's tables, by version: the one place that defines them. A new file gets them all; an older one is
      # migrated step by step; a Jiggler::JobQueue file, a file that is not jiggler's, or one from a newer jiggler is
      # refused without being touched (SQLiteFile::Schema).
      SCHEMA = SQLiteFile::Schema.new(SQLiteFile::Schema::STORE, {
        1 => <<~SQL,
          CREATE TABLE jobs (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            state TEXT,
            queue TEXT,
            run_at REAL,
            owner TEXT,
            payload TEXT NOT NULL
          );
          CREATE INDEX jobs_by_state_queue ON jobs (state, queue, run_at, id);
          CREATE INDEX jobs_by_state_time ON jobs (state, run_at);
          CREATE INDEX jobs_by_state_id ON jobs (state, id);
          CREATE INDEX jobs_by_owner ON jobs (owner) WHERE owner IS NOT NULL;
          CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL,
            at REAL NOT NULL,
            event TEXT NOT NULL
          );
          CREATE INDEX events_by_job ON events (job_id, id);
          CREATE TABLE processes (id TEXT PRIMARY KEY, info TEXT NOT NULL, expires_at REAL NOT NULL);
          CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
        SQL
        # The jiggler store's paused queues: servers do not fetch from them.
        2 => <<~SQL,
          CREATE TABLE paused_queues (queue TEXT PRIMARY KEY);
        SQL
        # Batch items (state "batching") name their batch class; finished jobs' return values (`result_ttl`) are kept
        # until they expire.
        3 => <<~SQL,
          ALTER TABLE jobs ADD COLUMN batch TEXT;
          CREATE TABLE results (jid TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at REAL NOT NULL);
          CREATE INDEX results_by_expiry ON results (expires_at);
        SQL
        # Jiggler::JobQueue's jobs, which shared this table until version 12, carried the time they were last modified.
        # The store's rows left it NULL.
        4 => <<~SQL,
          ALTER TABLE jobs ADD COLUMN modified REAL;
          UPDATE jobs SET modified = coalesce((SELECT max(at) FROM events WHERE events.job_id = jobs.id),
            (julianday('now') - 2440587.5) * 86400.0) WHERE queue IS NULL AND run_at IS NULL;
          CREATE INDEX jobs_by_state_modified ON jobs (state, modified) WHERE modified IS NOT NULL;
          CREATE INDEX jobs_by_modified ON jobs (modified) WHERE modified IS NOT NULL;
        SQL
        # Per-class job metrics by minute (minute 0 holds the totals since the file was made), and the quiet and stop
        # requests waiting for a process's next heartbeat.
        5 => <<~SQL,
          CREATE TABLE metrics (
            minute INTEGER NOT NULL,
            class TEXT NOT NULL,
            field TEXT NOT NULL,
            value REAL NOT NULL,
            PRIMARY KEY (minute, class, field)
          ) WITHOUT ROWID;
          CREATE TABLE process_signals (process TEXT NOT NULL, signal TEXT NOT NULL, at REAL NOT NULL);
          CREATE INDEX process_signals_by_process ON process_signals (process);
        SQL
        # Recurring tasks: their settings as servers last recorded them (NULL once no server names the task), the
        # last tick claimed, the last run and whether they are disabled. Unique jobs' locks: the jid holding each.
        # Concurrency limits: the slots held per key, the keys with jobs waiting, and each waiting job's key. Rate
        # limits: each key's starts in the last period, and its plan (starts and reservations of waiting jobs).
        6 => <<~SQL,
          CREATE TABLE recurring_tasks (
            name TEXT PRIMARY KEY,
            definition TEXT,
            tick INTEGER,
            last_run REAL,
            disabled INTEGER NOT NULL DEFAULT 0
          );
          CREATE TABLE unique_locks (lock TEXT PRIMARY KEY, jid TEXT NOT NULL, expires_at REAL NOT NULL);
          CREATE TABLE limit_slots (
            key TEXT NOT NULL, jid TEXT NOT NULL, expires_at REAL NOT NULL, PRIMARY KEY (key, jid)
          );
          CREATE TABLE limit_keys (key TEXT PRIMARY KEY, max INTEGER NOT NULL, ttl REAL NOT NULL);
          ALTER TABLE jobs ADD COLUMN waiting_key TEXT;
          CREATE INDEX jobs_waiting ON jobs (waiting_key, run_at, id) WHERE waiting_key IS NOT NULL;
          CREATE TABLE rate_starts (
            key TEXT NOT NULL, member TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (key, member)
          );
          CREATE TABLE rate_plan (key TEXT NOT NULL, member TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (key, member));
        SQL
        # Rate limits read a key's starts and plan by time: without these, each check scanned all of the key's rows.
        7 => <<~SQL,
          CREATE INDEX rate_starts_by_time ON rate_starts (key, at);
          CREATE INDEX rate_plan_by_time ON rate_plan (key, at);
        SQL
        # Requests to cancel jobs (Jiggler.cancel), kept a while for the servers that have not seen them yet.
        8 => <<~SQL,
          CREATE TABLE cancel_requests (jid TEXT NOT NULL, requested_by TEXT NOT NULL, at REAL NOT NULL);
          CREATE INDEX cancel_requests_by_time ON cancel_requests (at);
        SQL
        # Workflows: each step's dependants, whether it is done and its result, and, while it waits for its
        # dependencies, how many are left and its payload; per workflow, how many steps are not done and, once none is
        # left, when its state expires, whether a step died, and the job its first death pushes (on_death).
        9 => <<~SQL,
          CREATE TABLE workflow_steps (
            workflow TEXT NOT NULL,
            jid TEXT NOT NULL,
            queue TEXT NOT NULL,
            waiting INTEGER NOT NULL,
            payload TEXT,
            dependants TEXT NOT NULL,
            done INTEGER NOT NULL DEFAULT 0,
            result TEXT,
            PRIMARY KEY (workflow, jid)
          ) WITHOUT ROWID;
          CREATE TABLE workflows (
            id TEXT PRIMARY KEY,
            steps_left INTEGER NOT NULL,
            expires_at REAL,
            died INTEGER NOT NULL DEFAULT 0,
            death_queue TEXT,
            death_payload TEXT
          );
          CREATE INDEX workflows_by_expiry ON workflows (expires_at) WHERE expires_at IS NOT NULL;
        SQL
        # Jiggler.status finds a step waiting for its dependencies by its jid alone (the key is workflow, jid).
        10 => <<~SQL,
          CREATE INDEX workflow_steps_waiting ON workflow_steps (jid) WHERE waiting > 0;
        SQL
        # Workflows' on_complete callbacks: per step, the callbacks that wait for it to end (jids joined by ","),
        # whether it ended (done, dead or blocked by a dead dependency; 2: done after it had ended) and whether it died.
        11 => <<~SQL,
          ALTER TABLE workflow_steps ADD COLUMN callbacks TEXT NOT NULL DEFAULT '';
          ALTER TABLE workflow_steps ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
          ALTER TABLE workflow_steps ADD COLUMN dead INTEGER NOT NULL DEFAULT 0;
        SQL
        # Jiggler::JobQueue keeps files of its own. Rows it left here (they have a modified time) move, with their
        # events, to job_queue_jobs and job_queue_events, made only in a file that has any, which the store never
        # reads; the column and its indexes go.
        12 => lambda do |db|
          if db.get_first_value(
            "SELECT 1 FROM jobs WHERE modified IS NOT NULL LIMIT 1"
          )
            db.execute_batch(<<~SQL)
              CREATE TABLE job_queue_jobs AS SELECT id, state, payload, modified FROM jobs WHERE modified IS NOT NULL;
              CREATE TABLE job_queue_events AS SELECT * FROM events WHERE job_id IN (SELECT id FROM job_queue_jobs);
              DELETE FROM events WHERE job_id IN (SELECT id FROM job_queue_jobs);
              DELETE FROM jobs WHERE modified IS NOT NULL;
            SQL
          end
          db.execute_batch(<<~SQL)
            DROP INDEX jobs_by_state_modified;
            DROP INDEX jobs_by_modified;
            ALTER TABLE jobs DROP COLUMN modified;
          SQL
        end
      }.freeze)
    end
  end
end

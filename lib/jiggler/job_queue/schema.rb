# frozen_string_literal: true

module Jiggler
  class JobQueue
    # The tables of a jiggler SQLite file, by version. A new file gets them all; an older one is migrated step by step;
    # a file that is not jiggler's, or is from a newer jiggler, is refused without being touched.
    module Schema
      # Marks a file as jiggler's ("JIGL"), in SQLite's application_id header field.
      APPLICATION_ID = 0x4a49474c
      VERSION = 10

      MIGRATIONS = {
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
        # Recurring tasks: their settings as servers last recorded them (NULL once no server names the task), the
        # last tick claimed, the last run and whether they are disabled. Unique jobs' locks: the jid holding each.
        # Concurrency limits: the slots held per key, the keys with jobs waiting, and each waiting job's key. Rate
        # limits: each key's starts in the last period, and its plan (starts and reservations of waiting jobs).
        10 => <<~SQL
          CREATE TABLE recurring_tasks (
            name TEXT PRIMARY KEY,
            definition TEXT,
            tick INTEGER,
            last_run REAL,
            disabled INTEGER NOT NULL DEFAULT 0
          );
          CREATE TABLE unique_locks (lock TEXT PRIMARY KEY, jid TEXT NOT NULL, expires_at REAL NOT NULL);
          CREATE TABLE limit_slots (key TEXT NOT NULL, jid TEXT NOT NULL, expires_at REAL NOT NULL, PRIMARY KEY (key, jid));
          CREATE TABLE limit_keys (key TEXT PRIMARY KEY, max INTEGER NOT NULL, ttl REAL NOT NULL);
          ALTER TABLE jobs ADD COLUMN waiting_key TEXT;
          CREATE INDEX jobs_waiting ON jobs (waiting_key, run_at, id) WHERE waiting_key IS NOT NULL;
          CREATE TABLE rate_starts (key TEXT NOT NULL, member TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (key, member));
          CREATE TABLE rate_plan (key TEXT NOT NULL, member TEXT NOT NULL, at REAL NOT NULL, PRIMARY KEY (key, member));
        SQL
      }.freeze
    end
  end
end

# frozen_string_literal: true

require_relative "../sqlite_file"
require_relative "former_file"

module Jiggler
  class JobQueue
    # JobQueue's tables, by version, in a file of its own ("JOBQ"): the SQLite store's file is refused, and the
    # store refuses this one (SQLiteFile::Schema). A JobQueue file from before it had its own mark is converted
    # (FormerFile). A job's state is any JSON value (State); `modified` orders `poll`.
    SCHEMA = SQLiteFile::Schema.new(SQLiteFile::Schema::JOB_QUEUE, {
      1 => <<~SQL
        CREATE TABLE jobs (
          id INTEGER PRIMARY KEY AUTOINCREMENT,
          state TEXT,
          payload TEXT NOT NULL,
          modified REAL NOT NULL
        );
        CREATE INDEX jobs_by_state_modified ON jobs (state, modified);
        CREATE INDEX jobs_by_modified ON jobs (modified);
        CREATE TABLE events (
          id INTEGER PRIMARY KEY,
          job_id INTEGER NOT NULL,
          at REAL NOT NULL,
          event TEXT NOT NULL
        );
        CREATE INDEX events_by_job ON events (job_id, id);
      SQL
    }.freeze, adopt: FormerFile)
  end
end

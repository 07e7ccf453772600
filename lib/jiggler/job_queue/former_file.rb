# frozen_string_literal: true

require_relative "../sqlite_file"

module Jiggler
  class JobQueue
    # Files JobQueue made before it had a kind of its own (up to jiggler 1.0.0.pre1): marked as the SQLite store's,
    # schema 1 to 11, its jobs being the rows with neither a queue nor a run time. A file that holds nothing of the
    # store's is converted in place to JobQueue's tables, each job's id, state, payload and events as they were; a
    # file with anything of the store's in it stays refused, untouched.
    module FormerFile
      LAST_SHARED_VERSION = 11
      # The tables both used: they are carried over, not checked for the store's data.
      SHARED = %w[jobs events sqlite_sequence].freeze

      module_function

      # @returns [Boolean] whether `db` is such a file.
      def adopts?(db, application, version)
        application == SQLiteFile::Schema::STORE &&
          version.between?(1, LAST_SHARED_VERSION) &&
          !store_data?(db)
      end

      # Converts the file, inside the caller's transaction. @returns [Integer] JobQueue's schema version it is at.
      def adopt(db)
        modified = columns(db, "jobs").include?("modified") ? "s.modified, " : ""
        db.execute(
          "SELECT name FROM sqlite_master WHERE type = 'index' AND sql NOT NULL"
        ).each { |(name)| db.execute("DROP INDEX \"#{name}\"") }
        (tables(db) - SHARED).each do |name|
          db.execute("DROP TABLE \"#{name}\"")
        end
        db.execute("ALTER TABLE jobs RENAME TO shared_jobs")
        db.execute("ALTER TABLE events RENAME TO shared_events")
        db.execute_batch(SCHEMA.migrations.fetch(1))
        # A job from before schema 4 has no modified time: its last event's, else now (as schema 4 gave them).
        db.execute(<<~SQL, [Time.now.to_f])
          INSERT INTO jobs (id, state, payload, modified)
          SELECT s.id, s.state, s.payload, coalesce(#{modified}
            (SELECT max(at) FROM shared_events e WHERE e.job_id = s.id), ?)
          FROM shared_jobs s
        SQL
        db.execute(
          "INSERT INTO events (id, job_id, at, event) " \
          "SELECT id, job_id, at, event FROM shared_events"
        )
        db.execute("DROP TABLE shared_jobs")
        db.execute("DROP TABLE shared_events")
        1
      end

      def store_data?(db)
        return true unless (tables(db) & %w[jobs events]).size == 2
        store_jobs = db.get_first_value(
          "SELECT 1 FROM jobs WHERE queue NOT NULL OR run_at NOT NULL LIMIT 1"
        )
        store_jobs || (tables(db) - SHARED).any? do |name|
          db.get_first_value("SELECT 1 FROM \"#{name}\" LIMIT 1")
        end
      end

      def tables(db)
        db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
          .flatten
      end

      def columns(db, table)
        db.execute("SELECT name FROM pragma_table_info(?)", [table]).flatten
      end
      private_class_method :store_data?, :tables, :columns
    end
  end
end

# frozen_string_literal: true

require "json"
require "sqlite3"
require_relative "sqlite_file"

# Opened before its parts, which reopen it (see the autoloads in lib/jiggler.rb).
module Jiggler
  class JobQueue; end
end

require_relative "job_queue/schema"
require_relative "job_queue/state"
require_relative "job_queue/query"

module Jiggler
  # A durable job queue in one SQLite file, safe for many processes at once (WAL, short transactions): the API of
  # jobq. Jobs have an id, a state (any JSON value), a JSON payload, the time they were last modified and an ordered
  # log of events that records their creation and every change of state beside the events appended to it:
  #
  #   Jiggler::JobQueue.open("work.sqlite3") do |queue|
  #     job = queue.create({"url" => "https://example.com"}, "new")
  #     job = queue.poll({state: "new"}, ["fetching", 1])  # the least recently modified "new" job, now ["fetching", 1]
  #     queue.append_event(job.id, {"fetched" => 200})
  #     queue.cas_state(job.id, ["fetching", 1], "done")   # => the job, now "done"; nil if its state was not that
  #   end
  #
  # Its file is its own: opened on the SQLite store's file, it raises OpenError and changes nothing, so it can
  # never take, change or delete the store's jobs (nor the store this queue's).
  class JobQueue
    # Raised when the file cannot be opened as a JobQueue file (SQLiteFile::OpenError).
    OpenError = SQLiteFile::OpenError

    # JobQueue's connection: its jobs' logs are kept as the SQLite store keeps its history (SQLiteFile::Events).
    class Database < SQLiteFile::Connection
      include SQLiteFile::Events
    end

    # A job as read back: id, state, payload (parsed), events (oldest first, each [epoch seconds, event]) and when it
    # was last modified (a Time).
    Job = Struct.new(:id, :state, :payload, :events, :modified)

    JSON_CODER = SQLiteFile::JSON_CODER
    private_constant :JSON_CODER

    # Opens a queue, yields it and closes it.
    # @yields {|queue| ...}
    def self.open(path, **options)
      queue = new(path, **options)
      return queue unless block_given?
      begin
        yield queue
      ensure
        queue.close
      end
    end

    attr_reader :path, :db

    # Opens (creating and migrating as needed) the database at `path`.
    # @parameter path [String] a file path, or ":memory:".
    # @parameter synchronous [String] "normal" (safe against process crashes) or "full" (also against power loss).
    # @raises [OpenError] naming the file, when it cannot be created, is not a JobQueue file (the SQLite store's
    #   is refused), or is from a newer version.
    def initialize(path, synchronous: "normal")
      @path = path.to_s
      @db = SQLiteFile.open(
        @path, SCHEMA, synchronous: synchronous, connection: Database
      )
    end

    # Adds a job, logging its creation.
    # @parameter payload [Object] any JSON value.
    # @parameter state [Object] any JSON value.
    # @returns [Job] the job as stored.
    # @raises [ArgumentError] for a state that is not JSON.
    def create(payload, state = nil)
      now = Time.now.to_f
      stored = State.dump(state)
      json = JSON_CODER.dump(payload)
      event = {"type" => "job_created", "state" => state_value(stored)}
      id = transaction do
        @db.execute(
          "INSERT INTO jobs (state, payload, modified) VALUES (?, ?, ?)",
          [stored, json, now]
        )
        @db.last_insert_row_id.tap do |new_id|
          @db.add_event(new_id, event, at: now)
        end
      end
      Job.new(
        id,
        event["state"],
        JSON_CODER.load(json),
        [[now, event]],
        Time.at(now)
      )
    end

    # Reads a job with its events. @returns [Job | Nil]
    def get(id)
      row = @db.get_first_row(
        "SELECT id, state, typeof(state), payload, modified FROM jobs " \
        "WHERE id = ?",
        [id]
      )
      row && Job.new(
        row[0],
        State.load(row[1], row[2]),
        JSON_CODER.load(row[3]),
        events(id),
        Time.at(row[4])
      )
    end

    # Takes the least recently modified job matching `query` (jobq's round robin, which favours progress) and moves
    # it to `new_state`, atomically, logging the change.
    # @parameter query [Hash | Nil] `state:` and payload fields to match, e.g. `{state: "new", "kind" => "email"}`;
    #   nil matches any job. A field matches a JSON scalar of the same type, or an Array equal to it (`["x"]` never
    #   matches `"x"`).
    # @returns [Job | Nil] the job as it is now, or nil when none matches.
    # @raises [ArgumentError] for a query that is neither a Hash nor nil, a field value that is a Hash or not JSON,
    #   or a state that is not JSON.
    def poll(query, new_state)
      where, values = Query.conditions(query)
      stored = State.dump(new_state)
      transaction do
        id, old, type = @db.get_first_row(
          "SELECT id, state, typeof(state) FROM jobs " \
          "WHERE #{where} ORDER BY modified, id LIMIT 1",
          values
        )
        id && change_state(id, State.load(old, type), stored)
      end
    end

    # Moves a job from one state to another only if it is still in the first (compared as JSON), logging the change.
    # @returns [Job | Nil] the job as it is now, or nil when it was not in `old_state` (another process may have moved
    #   it first) or does not exist.
    # @raises [ArgumentError] for a state that is not JSON.
    def cas_state(id, old_state, new_state)
      expected = State.dump(old_state)
      stored = State.dump(new_state)
      transaction do
        change_state(
          id,
          state_value(expected),
          stored,
          "AND state IS ?",
          [expected]
        )
      end
    end

    # Appends an event (any JSON value) to a job's log.
    # @returns [Job | Nil] the job as it is now, or nil when there is no such job.
    def append_event(id, event)
      transaction do
        now = Time.now.to_f
        state, type, payload = @db.get_first_row(
          "UPDATE jobs SET modified = ? WHERE id = ? " \
          "RETURNING state, typeof(state), payload",
          [now, id]
        )
        next unless payload
        @db.add_event(id, event, at: now)
        job_as_now(id, State.load(state, type), payload, now)
      end
    end

    # A job's events, oldest first. @returns [Array([Float, Object])] empty for an unknown id.
    def events(id) = @db.events(id)

    # Deletes a job and its events. @returns [Boolean] whether it existed.
    def delete(id)
      transaction do
        @db.execute("DELETE FROM events WHERE job_id = ?", [id])
        @db.execute("DELETE FROM jobs WHERE id = ?", [id])
        @db.changes == 1
      end
    end

    # Closes the file.
    def close
      @db.close unless @db.nil? || @db.closed?
    end

    # Runs the block in a write transaction, taken at once so that two writers never deadlock.
    def transaction(&block)
      return yield if @db.transaction_active?
      @db.transaction(:immediate, &block)
    end

    private

    # Sets a job's state and modified time and logs the change, inside the caller's transaction.
    # @parameter condition [String] more SQL the job must match, with `?` for each of `values`.
    # @returns [Job | Nil] the job as it is now; nil when no job changed.
    def change_state(id, old, stored, condition = "", values = [])
      now = Time.now.to_f
      payload, = @db.get_first_row(
        "UPDATE jobs SET state = ?, modified = ? WHERE id = ? #{condition} " \
        "RETURNING payload",
        [stored, now, id, *values]
      )
      return unless payload
      state = state_value(stored)
      @db.add_event(
        id,
        {"type" => "job_state_advanced", "old" => old, "new" => state},
        at: now
      )
      job_as_now(id, state, payload, now)
    end

    def job_as_now(id, state, payload, modified)
      Job.new(
        id,
        state,
        JSON_CODER.load(payload),
        events(id),
        Time.at(modified)
      )
    end

    # A stored state as the value it stands for.
    def state_value(stored)
      stored.is_a?(SQLite3::Blob) ? JSON_CODER.load(stored) : stored
    end
  end
end

# frozen_string_literal: true

require "fileutils"
require "json"
require "sqlite3"
require_relative "error"
require_relative "job_queue/schema"
require_relative "job_queue/connection"
require_relative "job_queue/state"
require_relative "job_queue/query"

module Jiggler
  # A durable job queue in one SQLite file, safe for many processes at once (WAL, short transactions): the API of
  # jobq. Jobs have an id, a state (any JSON value), a JSON payload, the time they were last modified and an ordered
  # log of events that records their creation and every change of state beside the events appended to it. It is the
  # embedded store's foundation, and a small API of its own:
  #
  #   Jiggler::JobQueue.open("work.sqlite3") do |queue|
  #     job = queue.create({"url" => "https://example.com"}, "new")
  #     job = queue.poll({state: "new"}, ["fetching", 1])  # the least recently modified "new" job, now ["fetching", 1]
  #     queue.append_event(job.id, {"fetched" => 200})
  #     queue.cas_state(job.id, ["fetching", 1], "done")   # => the job, now "done"; nil if its state was not that
  #   end
  #
  # The SQLite store keeps its jobs in the same table, as rows without a modified time. This API never sees them:
  # every method below reads and changes only rows that have one (OWN), so a JobQueue opened on the store's file can
  # neither take, change nor delete the store's jobs.
  class JobQueue
    # Raised when the file cannot be opened as a jiggler database.
    class OpenError < Error; end

    # A job as read back: id, state, payload (parsed), events (oldest first, each [epoch seconds, event]) and when it
    # was last modified (a Time).
    Job = Struct.new(:id, :state, :payload, :events, :modified)

    # Payloads and events are written as JSON types only and read back as plain data, whatever the app's JSON options.
    JSON_CODER = State::CODER
    private_constant :JSON_CODER

    SYNCHRONOUS = %w[normal full].freeze
    # The condition that picks JobQueue's own rows, never the SQLite store's (which leave `modified` NULL).
    OWN = "modified IS NOT NULL"
    LOCK_TIMEOUT_MS = 5_000

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
    # @raises [OpenError] naming the file, when it cannot be created, is not jiggler's, or is from a newer version.
    def initialize(path, synchronous: "normal")
      @path = path.to_s
      raise ArgumentError, "synchronous must be one of #{SYNCHRONOUS.join(", ")}" unless SYNCHRONOUS.include?(synchronous.to_s)
      @db = connect
      Schema.check(@db, @path)
      configure(synchronous.to_s)
      Schema.migrate(@db, @path)
    rescue SQLite3::NotADatabaseException, SQLite3::CorruptException => error
      close
      raise OpenError, "#{@path} is not a jiggler database (#{error.message.lines.first.strip}); nothing was changed"
    rescue OpenError
      close
      raise
    end

    # Adds a job, logging its creation.
    # @parameter payload [Object] any JSON value.
    # @parameter state [Object] any JSON value.
    # @returns [Job] the job as stored.
    # @raises [ArgumentError] for a state that is not JSON.
    def create(payload, state = nil)
      now = Time.now.to_f
      stored = State.dump(state)
      json = dump(payload)
      event = {"type" => "job_created", "state" => state_value(stored)}
      id = transaction do
        @db.execute("INSERT INTO jobs (state, payload, modified) VALUES (?, ?, ?)", [stored, json, now])
        @db.last_insert_row_id.tap { |new_id| add_event(new_id, event, at: now) }
      end
      Job.new(id, event["state"], JSON_CODER.load(json), [[now, event]], Time.at(now))
    end

    # Reads a job with its events. @returns [Job | Nil]
    def get(id)
      row = @db.get_first_row("SELECT id, state, typeof(state), payload, modified FROM jobs WHERE id = ? AND #{OWN}", [id])
      row && Job.new(row[0], State.load(row[1], row[2]), JSON_CODER.load(row[3]), row_events(id), Time.at(row[4]))
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
        id, old, type = @db.get_first_row("SELECT id, state, typeof(state) FROM jobs " \
          "WHERE #{OWN} AND #{where} ORDER BY modified, id LIMIT 1", values)
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
      transaction { change_state(id, state_value(expected), stored, "AND state IS ?", [expected]) }
    end

    # Appends an event (any JSON value) to a job's log.
    # @returns [Job | Nil] the job as it is now, or nil when there is no such job.
    def append_event(id, event)
      transaction do
        now = Time.now.to_f
        state, type, payload = @db.get_first_row("UPDATE jobs SET modified = ? WHERE id = ? AND #{OWN} " \
          "RETURNING state, typeof(state), payload", [now, id])
        next unless payload
        add_event(id, event, at: now)
        job_as_now(id, State.load(state, type), payload, now)
      end
    end

    # A job's events, oldest first. @returns [Array([Float, Object])] empty for an unknown id.
    def events(id)
      own = @db.get_first_value("SELECT 1 FROM jobs WHERE id = ? AND #{OWN}", [id])
      own ? row_events(id) : []
    end

    # The events of any row, the SQLite store's own included (its job history), oldest first.
    # @returns [Array([Float, Object])]
    def row_events(id)
      @db.execute("SELECT at, event FROM events WHERE job_id = ? ORDER BY id", [id]).map do |at, event|
        [at, JSON_CODER.load(event)]
      end
    end

    # Deletes a job and its events. @returns [Boolean] whether it existed.
    def delete(id)
      transaction { delete_where("id = ? AND #{OWN}", [id]) == 1 }
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

    # Records an event inside the caller's transaction.
    def add_event(id, event, at: Time.now.to_f)
      @db.execute("INSERT INTO events (job_id, at, event) VALUES (?, ?, ?)", [id, at, dump(event)])
    end

    # Deletes the jobs matching an SQL condition, with their events, inside the caller's transaction.
    # @parameter where [String] a condition on the jobs table, with `?` for each of `values`.
    # @returns [Integer] how many jobs were deleted.
    def delete_where(where, values)
      @db.execute("DELETE FROM events WHERE job_id IN (SELECT id FROM jobs WHERE #{where})", values)
      @db.execute("DELETE FROM jobs WHERE #{where}", values)
      @db.changes
    end

    # Records events for many jobs in one statement per 300, inside the caller's transaction.
    # @parameter events [Array([Integer, Object])] job id and event.
    def add_events(events, at: Time.now.to_f)
      events.each_slice(300) do |slice|
        @db.execute("INSERT INTO events (job_id, at, event) VALUES #{(["(?, ?, ?)"] * slice.size).join(", ")}",
          slice.flat_map { |id, event| [id, at, dump(event)] })
      end
    end

    private

    def connect
      FileUtils.mkdir_p(::File.dirname(@path)) unless @path == ":memory:"
      db = Connection.new(@path)
      db.wait_for_locks(LOCK_TIMEOUT_MS / 1000.0)
      db
    rescue SQLite3::Exception, SystemCallError => error
      raise OpenError, "cannot open jiggler database #{@path}: #{error.message.lines.first.strip}"
    end

    def configure(synchronous)
      # Switching to WAL needs the file to itself and SQLite does not wait for that lock: retry while another
      # process holds it.
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + LOCK_TIMEOUT_MS / 1000.0
      begin
        @db.execute("PRAGMA journal_mode = WAL")
      rescue SQLite3::BusyException
        raise if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep(0.01)
        retry
      end
      @db.execute("PRAGMA synchronous = #{synchronous.upcase}")
    end

    # Sets a job's state and modified time and logs the change, inside the caller's transaction.
    # @parameter condition [String] more SQL the job must match, with `?` for each of `values`.
    # @returns [Job | Nil] the job as it is now; nil when no job changed.
    def change_state(id, old, stored, condition = "", values = [])
      now = Time.now.to_f
      payload, = @db.get_first_row("UPDATE jobs SET state = ?, modified = ? WHERE id = ? AND #{OWN} #{condition} " \
        "RETURNING payload", [stored, now, id, *values])
      return unless payload
      state = state_value(stored)
      add_event(id, {"type" => "job_state_advanced", "old" => old, "new" => state}, at: now)
      job_as_now(id, state, payload, now)
    end

    def job_as_now(id, state, payload, modified)
      Job.new(id, state, JSON_CODER.load(payload), row_events(id), Time.at(modified))
    end

    # A stored state as the value it stands for.
    def state_value(stored) = stored.is_a?(SQLite3::Blob) ? JSON_CODER.load(stored) : stored

    def dump(value) = JSON_CODER.dump(value)
  end
end

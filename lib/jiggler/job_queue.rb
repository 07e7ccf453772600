# frozen_string_literal: true

require "fileutils"
require "json"
require "sqlite3"
require_relative "error"
require_relative "job_queue/schema"
require_relative "job_queue/connection"

module Jiggler
  # A durable job queue in one SQLite file, safe for many processes at once (WAL, short transactions). Jobs have an
  # id, a state (any String), a JSON payload and an ordered log of events. It is the embedded store's foundation, and
  # a small API of its own:
  #
  #   Jiggler::JobQueue.open("work.sqlite3") do |queue|
  #     id = queue.create({"url" => "https://example.com"}, "new")
  #     job = queue.poll({state: "new"}, "working")  # the oldest "new" job, now "working"
  #     queue.append_event(job.id, {"fetched" => 200})
  #     queue.cas_state(job.id, "working", "done")   # => true
  #   end
  class JobQueue
    # Raised when the file cannot be opened as a jiggler database.
    class OpenError < Error; end

    # A job as read back: id, state, payload (parsed) and events (oldest first, each [epoch seconds, event]).
    Job = Struct.new(:id, :state, :payload, :events)

    # Payloads and events are written as JSON types only and read back as plain data, whatever the app's JSON options.
    JSON_CODER = JSON::Coder.new(max_nesting: false)
    private_constant :JSON_CODER

    SYNCHRONOUS = %w[normal full].freeze
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
      check_file
      configure(synchronous.to_s)
      migrate
    rescue SQLite3::NotADatabaseException, SQLite3::CorruptException => error
      close
      raise OpenError, "#{@path} is not a jiggler database (#{error.message.lines.first.strip}); nothing was changed"
    rescue OpenError
      close
      raise
    end

    # Adds a job. @returns [Integer] its id.
    def create(payload, state = nil)
      transaction do
        @db.execute("INSERT INTO jobs (state, payload) VALUES (?, ?)", [state&.to_s, dump(payload)])
        @db.last_insert_row_id
      end
    end

    # Reads a job with its events. @returns [Job | Nil]
    def get(id)
      row = @db.get_first_row("SELECT id, state, payload FROM jobs WHERE id = ?", [id])
      row && Job.new(row[0], row[1], JSON_CODER.load(row[2]), events(id))
    end

    # Takes the oldest job matching `query` and moves it to `new_state`, atomically.
    # @parameter query [Hash] `state:` and payload fields to match, e.g. `{state: "new", "kind" => "email"}`.
    # @returns [Job | Nil] the job as it is now, or nil when none matches.
    def poll(query, new_state)
      where, values = conditions(query)
      id = transaction do
        found = @db.get_first_value("SELECT id FROM jobs WHERE #{where} ORDER BY id LIMIT 1", values)
        @db.execute("UPDATE jobs SET state = ? WHERE id = ?", [new_state.to_s, found]) if found
        found
      end
      id && get(id)
    end

    # Moves a job from one state to another only if it is still in the first.
    # @returns [Boolean] whether it moved (another process may have moved it first).
    def cas_state(id, old_state, new_state)
      transaction do
        @db.execute("UPDATE jobs SET state = ? WHERE id = ? AND state = ?", [new_state.to_s, id, old_state.to_s])
        @db.changes == 1
      end
    end

    # Appends an event (any JSON value) to a job's log.
    # @returns [Boolean] false when there is no such job.
    def append_event(id, event)
      transaction do
        next false unless @db.get_first_value("SELECT 1 FROM jobs WHERE id = ?", [id])
        add_event(id, event)
        true
      end
    end

    # A job's events, oldest first. @returns [Array([Float, Object])]
    def events(id)
      @db.execute("SELECT at, event FROM events WHERE job_id = ? ORDER BY id", [id]).map do |at, event|
        [at, JSON_CODER.load(event)]
      end
    end

    # Deletes a job and its events. @returns [Boolean] whether it existed.
    def delete(id)
      transaction { delete_where("id = ?", [id]) == 1 }
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
    def add_event(id, event, at: Time.now.to_f) = add_events([[id, event]], at: at)

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
      # Waiting for another process's lock sleeps in Ruby, so other fibers and threads run meanwhile.
      db.busy_handler_timeout = LOCK_TIMEOUT_MS
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

    # Creates or upgrades the tables; checks again inside the transaction, as another process may be doing the same.
    def migrate
      transaction do
        version = check_file
        Schema::MIGRATIONS.each { |step, sql| @db.execute_batch(sql) if step > version }
        @db.execute("PRAGMA application_id = #{Schema::APPLICATION_ID}")
        @db.execute("PRAGMA user_version = #{Schema::VERSION}")
      end
    end

    # @returns [Integer] the file's schema version (0 for a new file).
    def check_file
      # One statement, one snapshot: another process may be creating the tables right now.
      application, version, tables = @db.get_first_row("SELECT (SELECT application_id FROM pragma_application_id), " \
        "(SELECT user_version FROM pragma_user_version), (SELECT count(*) FROM sqlite_master)")
      if application != Schema::APPLICATION_ID && (tables.positive? || application != 0)
        raise OpenError, "#{@path} is not a jiggler database (it holds other tables); nothing was changed"
      end
      if version > Schema::VERSION
        raise OpenError, "#{@path} was written by a newer jiggler (schema #{version}, this one knows #{Schema::VERSION}); " \
          "upgrade jiggler or point it at another file"
      end
      version
    end

    def conditions(query)
      clauses = []
      values = []
      query.each do |key, value|
        column = column_for(key)
        if value.nil?
          clauses << "#{column} IS NULL"
        else
          clauses << "#{column} = ?"
          values << bindable(value)
        end
      end
      [clauses.empty? ? "1" : clauses.join(" AND "), values]
    end

    def column_for(key)
      return "state" if key.to_s == "state"
      raise ArgumentError, "payload field names are letters, digits and _ (got #{key.inspect})" unless /\A\w+\z/.match?(key.to_s)
      "json_extract(payload, '$.#{key}')"
    end

    # SQLite's JSON functions give true and false as 1 and 0.
    def bindable(value)
      case value
      when true then 1
      when false then 0
      when Symbol then value.to_s
      else value
      end
    end

    def dump(value) = JSON_CODER.dump(value)
  end
end

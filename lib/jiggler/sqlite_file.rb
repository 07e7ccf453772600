# frozen_string_literal: true

require "fileutils"
require "json"
require "sqlite3"
require_relative "error"
require_relative "sqlite_file/connection"
require_relative "sqlite_file/schema"
require_relative "sqlite_file/events"

module Jiggler
  # What the two kinds of jiggler SQLite file share, whatever their tables: a connection that keeps its prepared
  # statements and waits for other processes' locks, WAL, and a schema that marks whose file it is and migrates it.
  # The SQLite store (Store::SQLite::Schema) and Jiggler::JobQueue (JobQueue::Schema) each own their tables, in files
  # of their own: neither opens the other's.
  module SQLiteFile
    # Raised when a file cannot be opened as the kind of jiggler file asked for; nothing in it was changed.
    class OpenError < Error; end

    # JSON is written as JSON types only and read back as plain data, whatever the app's JSON options.
    JSON_CODER = JSON::Coder.new(max_nesting: false)
    SYNCHRONOUS = %w[normal full].freeze
    # How long a statement waits for another process's lock before it fails.
    LOCK_TIMEOUT = 5.0

    module_function

    # Opens (creating and migrating as needed) the file at `path` as `schema` describes it.
    # @parameter path [String] a file path, or ":memory:".
    # @parameter schema [Schema] whose file it must be, and its tables.
    # @parameter synchronous [String] "normal" (safe against process crashes) or "full" (also against power loss).
    # @parameter connection [Class] Connection or a subclass of it, the class of the returned connection.
    # @returns [Connection]
    # @raises [OpenError] naming the file, when it cannot be created, is not of the kind asked for, or is from a
    #   newer jiggler.
    def open(path, schema, synchronous: "normal", connection: Connection)
      unless SYNCHRONOUS.include?(synchronous.to_s)
        raise ArgumentError,
          "synchronous must be one of #{SYNCHRONOUS.join(", ")}"
      end
      db = connect(path, connection)
      schema.check(db, path)
      use_wal(db)
      db.execute("PRAGMA synchronous = #{synchronous.to_s.upcase}")
      schema.migrate(db, path)
      db
    rescue SQLite3::NotADatabaseException, SQLite3::CorruptException => error
      db&.close
      raise OpenError,
        "#{path} is not a jiggler database " \
        "(#{error.message.lines.first.strip}); nothing was changed"
    rescue OpenError
      db&.close
      raise
    end

    def connect(path, connection)
      FileUtils.mkdir_p(::File.dirname(path)) unless path == ":memory:"
      connection.new(path).tap { |db| db.wait_for_locks(LOCK_TIMEOUT) }
    rescue SQLite3::Exception, SystemCallError => error
      raise OpenError,
        "cannot open jiggler database #{path}: " \
        "#{error.message.lines.first.strip}"
    end

    # Switching to WAL needs the file to itself and SQLite does not wait for that lock: retry while another process
    # holds it.
    def use_wal(db)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + LOCK_TIMEOUT
      begin
        db.execute("PRAGMA journal_mode = WAL")
      rescue SQLite3::BusyException
        raise if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep(0.01)
        retry
      end
    end
    private_class_method :connect, :use_wal
  end
end

# frozen_string_literal: true

require "fileutils"
require "socket"
require "tmpdir"
require_relative "ports"

# A private PostgreSQL cluster on a free loopback port: `initdb` in a temporary directory, then
# `pg_ctl start`, run as the `postgres` user when the tests run as root (PostgreSQL refuses to run
# as root). `PostgresServer.instance` is the suite's shared one, started on first use and stopped
# after the run; its database is `jiggler_test`, and each test works in a schema of its own (the
# store's namespace).
class PostgresServer
  DATABASE = "jiggler_test"
  # Durability is not what the tests check: a test cluster that fsyncs nothing runs them faster.
  SETTINGS = %w[
    fsync=off synchronous_commit=off full_page_writes=off max_connections=400
    log_min_messages=fatal
  ].freeze

  attr_reader :port, :dir

  def self.instance
    @instance ||= new.start
  end

  def initialize
    @dir = Dir.mktmpdir("jiggler-postgres")
    @port = Ports.free_port
  end

  def url = "postgres://postgres@127.0.0.1:#{@port}/#{DATABASE}"

  # Drops a test's schema (its namespace) and everything in it.
  def drop_schema(namespace)
    require "pg"
    PG.connect(url) do |db|
      db.exec(
        "SET client_min_messages = warning; " \
        "DROP SCHEMA IF EXISTS #{PG::Connection.quote_ident(namespace)} CASCADE"
      )
    end
  end

  def start
    FileUtils.chown("postgres", nil, @dir) if root?
    run(
      "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8",
      "--no-sync"
    )
    settings = SETTINGS.map { |setting| "-c #{setting}" }
    options = ["-p #{@port}", "-h 127.0.0.1", "-k #{@dir}", *settings].join(" ")
    run(
      "pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "30", "start"
    )
    run(
      "createdb", "-h", "127.0.0.1", "-p", @port.to_s, "-U", "postgres",
      DATABASE
    )
    Minitest.after_run { stop } if defined?(Minitest)
    self
  end

  def stop
    running = File.exist?(File.join(data, "postmaster.pid"))
    run("pg_ctl", "-D", data, "-m", "immediate", "-w", "stop") if running
    FileUtils.rm_rf(@dir)
  end

  private

  def data = File.join(@dir, "data")

  def log = File.join(@dir, "postgres.log")

  def root? = Process.uid.zero?

  # Runs a PostgreSQL program (as the postgres user when root), raising with its output when it
  # fails.
  def run(program, *args)
    command = [binary(program), *args]
    command = ["runuser", "-u", "postgres", "--", *command] if root?
    output = IO.popen(command, err: [:child, :out], &:read)
    unless $?.success?
      raise "#{program} failed: #{output}#{File.read(log) if File.exist?(log)}"
    end
  end

  # Debian keeps the server's programs out of PATH, in /usr/lib/postgresql/<version>/bin.
  def binary(program)
    found = Dir["/usr/lib/postgresql/*/bin/#{program}"]
    found.max_by { |path| path[%r{postgresql/(\d+)}, 1].to_i } || program
  end
end

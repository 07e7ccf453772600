# frozen_string_literal: true

require "fileutils"
require "tmpdir"
require_relative "ports"
require_relative "postgres_server"

# Debian's PgBouncer in transaction mode in front of the suite's PostgreSQL (PostgresServer): a server connection is
# lent for one transaction at a time, as a production pooler does. Run as the postgres user when the tests run as root
# (PgBouncer refuses to run as root). `PgBouncerServer.instance` starts on first use and stops after the run.
class PgBouncerServer
  def self.instance
    @instance ||= new.start
  end

  def self.available? = !binary.nil?

  def self.binary
    [
      "/usr/sbin/pgbouncer",
      *ENV.fetch("PATH", "").split(":")
        .map { |dir| File.join(dir, "pgbouncer") }
    ].find { |path| File.executable?(path) }
  end

  def initialize
    @dir = Dir.mktmpdir("jiggler-pgbouncer")
    @port = Ports.free_port
  end

  def url = "postgres://postgres@127.0.0.1:#{@port}/#{PostgresServer::DATABASE}"

  def start
    postgres = PostgresServer.instance
    File.write(ini, <<~INI)
      [databases]
      #{PostgresServer::DATABASE} = host=127.0.0.1 port=#{postgres.port} \
      dbname=#{PostgresServer::DATABASE} user=postgres
      [pgbouncer]
      listen_addr = 127.0.0.1
      listen_port = #{@port}
      unix_socket_dir =
      auth_type = any
      pool_mode = transaction
      max_client_conn = 500
      default_pool_size = 10
      logfile = #{@dir}/pgbouncer.log
      pidfile = #{pidfile}
    INI
    FileUtils.chown_R("postgres", nil, @dir) if Process.uid.zero?
    command = [self.class.binary, "-d", ini]
    command = ["runuser", "-u", "postgres", "--", *command] if Process.uid.zero?
    system(*command) or raise "pgbouncer did not start: #{log}"
    Ports.wait_until_listening(@port, "pgbouncer")
    Minitest.after_run { stop } if defined?(Minitest)
    self
  end

  def stop
    Process.kill("TERM", Integer(File.read(pidfile))) if File.exist?(pidfile)
  rescue Errno::ESRCH
    nil
  ensure
    FileUtils.rm_rf(@dir)
  end

  private

  def ini = File.join(@dir, "pgbouncer.ini")

  def pidfile = File.join(@dir, "pgbouncer.pid")

  def log
    File.exist?(File.join(@dir, "pgbouncer.log")) ?
      File.read(File.join(@dir, "pgbouncer.log")) : ""
  end
end

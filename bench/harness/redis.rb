# frozen_string_literal: true

require "socket"
require "tmpdir"
require "fileutils"

module Bench
  # A private redis-server on a free loopback port, with no persistence, and a minimal RESP client so that the
  # harness itself needs no gem.
  class Redis
    attr_reader :port

    def initialize
      @dir = Dir.mktmpdir("jiggler-bench-redis")
      @port = Bench.free_port
    end

    def url = "redis://127.0.0.1:#{@port}/0"

    def start
      @pid = Process.spawn(
        "redis-server",
        "--port", @port.to_s,
        "--bind", "127.0.0.1",
        "--dir", @dir,
        "--save", "",
        "--appendonly", "no",
        "--loglevel", "warning",
        out: File::NULL, err: File::NULL
      )
      Bench.wait_until(10, "redis-server on port #{@port}") do
        Bench.listening?(@port)
      end
      @version = info("server")[/redis_version:(\S+)/, 1]
      self
    end

    attr_reader :version

    def stop
      Process.kill(:TERM, @pid) if @pid
      Process.wait(@pid) if @pid
      FileUtils.rm_rf(@dir)
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end

    # Runs one command and returns its reply (strings, integers, arrays).
    def call(*args)
      socket = (@socket ||= TCPSocket.new("127.0.0.1", @port))
      socket.write(
        "*#{args.size}\r\n" +
          args.map { |arg| "$#{arg.to_s.bytesize}\r\n#{arg}\r\n" }.join
      )
      read_reply(socket)
    end

    def info(section) = call("INFO", section)

    # Commands Redis has processed so far (each INFO call counts one).
    def commands = info("stats")[/total_commands_processed:(\d+)/, 1].to_i

    # Clients blocked in a command (BLMOVE, BRPOP): an idle server of ours waits in one per process.
    def blocked_clients = info("clients")[/blocked_clients:(\d+)/, 1].to_i

    private

    def read_reply(socket)
      line = socket.gets("\r\n").chomp("\r\n")
      case line[0]
      when "+" then line[1..]
      when "-" then raise "redis: #{line[1..]}"
      when ":" then line[1..].to_i
      when "$"
        size = line[1..].to_i
        (size < 0) ? nil : socket.read(size + 2).byteslice(0, size)
      when "*" then Array.new(line[1..].to_i) { read_reply(socket) }
      end
    end
  end
end

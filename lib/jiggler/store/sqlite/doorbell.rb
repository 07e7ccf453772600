# frozen_string_literal: true

require "socket"
require "digest"
require "tmpdir"
require "fileutils"
require "securerandom"

module Jiggler
  module Store
    class SQLite
      # Wakes the idle servers of one database file on this machine without their polling it: each waiting server
      # listens on a Unix datagram socket of its own in a directory named after the file, and a write that announces
      # work rings every socket there once it has committed. A doorbell only says "look again": the waiter still reads
      # the counters, and a ring that is lost (a full socket buffer, a process with another TMPDIR) is caught by the
      # waiter's slow poll.
      class Doorbell
        # Longest socket path the platforms allow (sun_path is 108 bytes on Linux, 104 on macOS).
        MAX_PATH = 100
        # Seconds after a change of the directory during which its listing is made again at each ring (see `bells`).
        RECENT = 1.0

        # @parameter database [String] the database file's path.
        def initialize(database)
          name = Digest::SHA256.hexdigest(::File.expand_path(database))[0, 16]
          @dir = ::File.join(Dir.tmpdir, "jiggler-#{name}")
          @listed_at = nil
          @bells = []
        end

        # Rings every waiting server's socket; never raises (the waiters' poll is the fallback).
        def ring
          bells.each { |path| ring_one(path) }
        rescue SystemCallError
          nil
        end

        # Waits until the doorbell rings or `timeout` seconds pass.
        # @returns [Boolean | Nil] whether it rang; nil when this process cannot listen (the caller polls instead).
        # @asynchronous
        def wait(timeout)
          socket = listener or return
          rang = socket.wait_readable(timeout)
          drain(socket) if rang
          !rang.nil?
        end

        # Stops listening and removes this process's socket.
        def close
          return unless @listener
          @listener.close
          ::File.unlink(@path)
        rescue SystemCallError
          nil
        ensure
          @listener = nil
        end

        private

        # The socket paths in the directory, listed again only when it changed (a server came or went). The kernel
        # stamps the change with a coarse clock (a tick, a few ms), so a socket bound in the tick of a listing leaves
        # the time as it was: a listing that may be that close to the change is not trusted beyond the next ring.
        def bells
          changed = ::File.mtime(@dir)
          if changed != @listed_at
            @bells = Dir.children(@dir).map { |name| ::File.join(@dir, name) }
            @listed_at = (Time.now - changed < RECENT) ? nil : changed
          end
          @bells
        rescue Errno::ENOENT
          []
        end

        def ring_one(path)
          @sender ||= Socket.new(:UNIX, :DGRAM)
          @sender.sendmsg_nonblock(
            ".",
            0,
            Socket.sockaddr_un(path),
            exception: false
          )
        rescue Errno::ECONNREFUSED, Errno::ENOENT
          forget(path) # its server is gone without closing it (kill -9)
        rescue SystemCallError
          nil
        end

        def forget(path)
          ::File.unlink(path)
        rescue SystemCallError
          nil
        end

        def listener
          return @listener if @listener || @unavailable
          FileUtils.mkdir_p(@dir, mode: 0o700)
          @path = ::File.join(@dir, "#{Process.pid}-#{SecureRandom.hex(4)}")
          if @path.bytesize > MAX_PATH
            raise ArgumentError, "socket path too long"
          end
          socket = Socket.new(:UNIX, :DGRAM)
          socket.bind(Socket.sockaddr_un(@path))
          @listener = socket
        rescue SystemCallError, ArgumentError
          socket&.close
          @unavailable = true
          nil
        end

        def drain(socket)
          loop do
            if socket.recv_nonblock(64, exception: false) == :wait_readable
              break
            end
          end
        end
      end
    end
  end
end

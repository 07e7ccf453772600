# frozen_string_literal: true

require "etc"
require_relative "../../jiggler"

module Jiggler
  module Server
    # Runs several server processes forked from this one, which has loaded the application once, so the children
    # share its memory copy-on-write. It restarts a child that dies (at once if it had run for a while, else after a
    # delay that doubles while children keep dying young), passes TERM, INT, TSTP and TTIN on to every child, and
    # returns once they have all stopped. Each child is a whole server: its own identity in the process registry, its
    # own connections (opened after the fork), and when it dies, its jobs go back to their queues through the reaper
    # of any live process, as for any dead process.
    #
    # Signal traps only write the signal's name to a pipe; the loop in `run` reads it and acts.
    class Supervisor
      FORWARDED = %w[INT TERM TSTP TTIN].freeze
      # A child that ran at least this many seconds before dying is restarted at once.
      STEADY = 30
      FIRST_DELAY = 1.0
      MAX_DELAY = 30.0

      # One forked server.
      Child = Struct.new(:slot, :started_at)
      private_constant :Child

      # How many processes a `processes` setting means.
      # @parameter setting [Integer | String] a count, or "auto" for one per core.
      # @returns [Integer]
      def self.count(setting) = (setting == "auto") ? Etc.nprocessors : setting

      # @parameter count [Integer] the number of server processes to keep running.
      # @parameter stop_timeout [Numeric] seconds after the first stop signal before children still alive are killed.
      def initialize(count:, stop_timeout:, logger: Jiggler.logger)
        @count = count
        @stop_timeout = stop_timeout
        @logger = logger
        @children = {}
        @delays = Array.new(count, 0.0)
        @restarts = {}
        @stop_deadline = nil
        @quiet = false
        @failed = false
      end

      # Forks the children and supervises them until every one has stopped.
      # @yields {...} runs one server in a child; its value is the child's exit status.
      # @returns [Integer] 0 when every child stopped cleanly, else 1.
      def run(&server)
        @server = server
        @reader, @writer = IO.pipe
        previous = trap_signals
        @logger.info("supervisor: starting #{@count} server processes")
        @count.times { |slot| spawn(slot) }
        supervise
        @failed ? 1 : 0
      ensure
        previous&.each { |signal, handler| trap(signal, handler) }
        [@reader, @writer].each { |io| io&.close }
      end

      private

      def trap_signals
        (FORWARDED + ["CHLD"]).to_h do |signal|
          [signal, trap(signal) { @writer.write_nonblock("#{signal}\n", exception: false) }]
        end
      end

      def supervise
        until @stop_deadline && @children.empty?
          read_signals.each { |signal| handle(signal) }
          reap
          restart_due
          kill_late
        end
      end

      # Waits for a signal, a restart or the stop deadline. @returns [Array(String)] the signals that came.
      def read_signals
        return [] unless IO.select([@reader], nil, nil, wait_time)
        names = @reader.read_nonblock(4096, exception: false)
        names.is_a?(String) ? names.split : []
      end

      # Seconds until the next restart or the stop deadline (at most one, so that a missed signal costs little).
      def wait_time
        times = [*@restarts.values, @stop_deadline].compact
        times.empty? ? 1.0 : (times.min - now).clamp(0.0, 1.0)
      end

      def handle(signal)
        case signal
        when "INT", "TERM" then stop(signal)
        when "TSTP" then quiet
        when "TTIN" then dump
        end
      end

      def stop(signal)
        @logger.info("supervisor: #{signal}, stopping #{@children.size} server processes")
        @stop_deadline ||= now + @stop_timeout
        @restarts.clear
        forward(signal)
      end

      def quiet
        @quiet = true
        forward("TSTP")
      end

      def dump
        @logger.info("supervisor: server processes #{@children.keys.join(", ")}")
        forward("TTIN")
      end

      def forward(signal)
        @children.each_key do |pid|
          Process.kill(signal, pid)
        rescue Errno::ESRCH
          nil # a child that just died; reaped next
        end
      end

      def reap
        loop do
          pid, status = Process.wait2(-1, Process::WNOHANG)
          break unless pid
          child = @children.delete(pid) or next
          @stop_deadline ? stopped(pid, status) : died(pid, child, status)
        end
      rescue Errno::ECHILD
        nil
      end

      def stopped(pid, status)
        # A TERM or INT that came before the child installed its own traps ended it before it held any job.
        clean = status.success? || (status.signaled? && %w[TERM INT].include?(Signal.signame(status.termsig)))
        @failed ||= !clean
        @logger.info("supervisor: process #{pid} stopped (#{reason(status)})")
      end

      def died(pid, child, status)
        lived = now - child.started_at
        @delays[child.slot] = (lived >= STEADY) ? 0.0 : (@delays[child.slot] * 2).clamp(FIRST_DELAY, MAX_DELAY)
        if @quiet
          @logger.error("supervisor: process #{pid} died (#{reason(status)}); not replaced while quiet")
        else
          @logger.error(format("supervisor: process %d died (%s) after %.1f s; replacing it in %.1f s", pid,
            reason(status), lived, @delays[child.slot]))
          @restarts[child.slot] = now + @delays[child.slot]
        end
      end

      def reason(status)
        status.signaled? ? "killed by SIG#{Signal.signame(status.termsig)}" : "exit status #{status.exitstatus}"
      end

      def restart_due
        @restarts.select { |_, at| at <= now }.each_key do |slot|
          @restarts.delete(slot)
          spawn(slot)
        end
      end

      def kill_late
        return unless @stop_deadline && now > @stop_deadline && @children.any?
        @logger.error("supervisor: processes #{@children.keys.join(", ")} did not stop in time; killing them")
        forward("KILL")
        @failed = true
        @stop_deadline = now + 1
      end

      def spawn(slot)
        pid = fork { run_child }
        @children[pid] = Child.new(slot, now)
        @logger.info("supervisor: process #{pid} started (#{slot + 1} of #{@count})")
      rescue SystemCallError => error
        @logger.error("supervisor: could not fork: #{error.message}; trying again in #{MAX_DELAY} s")
        @restarts[slot] = now + MAX_DELAY
      end

      # In the child: the server sets its own traps; until then the default actions apply. `exit!` skips the at_exit
      # hooks the parent registered, which are the parent's to run.
      def run_child
        (FORWARDED + ["CHLD"]).each { |signal| trap(signal, "DEFAULT") }
        [@reader, @writer].each(&:close)
        status = begin
          @server.call
        rescue SystemExit => exit
          exit.status
        rescue Exception => error # rubocop:disable Lint/RescueException -- the child ends here whatever happens
          @logger.error("server process failed: #{error.class}: #{error.message}")
          1
        end
        $stdout.flush
        $stderr.flush
        exit!(status)
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end

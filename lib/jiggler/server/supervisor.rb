# frozen_string_literal: true

require "etc"
require_relative "../../jiggler"
require_relative "identity"

module Jiggler
  module Server
    # Runs several server processes forked from this one, which loaded the application once, so they
    # share its memory copy-on-write. It restarts a child that dies (at once if it had run a while,
    # else after a delay that doubles while children keep dying young), and puts the jobs the child
    # held back in their queues at once, by the reaper's rules (Reaper#recover, on a store connection
    # of its own), rather than when its registration expires. It passes TERM, INT, TSTP and TTIN on
    # to every child, logs and ignores HUP, USR1 and USR2, and returns once every child has stopped.
    # A child stopped on request (`jiggler stop`) exits with STOPPED_ON_REQUEST and is not replaced.
    # A child stops as on TERM when the supervisor is gone, even by kill -9 (see `watch_supervisor`).
    # Signal traps only write the signal's name to a pipe; the loop in `run` reads it between forks.
    class Supervisor
      FORWARDED = %w[INT TERM TSTP TTIN].freeze
      # Signals that would end a process, logged and ignored: jiggler reopens no file (it logs to
      # standard output), and HUP also comes when the terminal closes.
      IGNORED = %w[HUP USR1 USR2].freeze
      # The exit status of a server process that stopped because it was asked to through the store.
      STOPPED_ON_REQUEST = 3
      # The most server processes per core, and the least maximum on any machine (see `max`).
      PER_CORE = 4
      LEAST_MAX = 16
      # A child that ran at least this many seconds before dying is restarted at once.
      STEADY = 30
      FIRST_DELAY = 1.0
      MAX_DELAY = 30.0

      # One forked server: its slot, when it started, and its id in the process registry.
      Child = Struct.new(:slot, :started_at, :process)
      private_constant :Child

      # The most server processes `processes` (`-p`) may ask for here: 4 per core, at least 16. Each
      # is a whole server with its own heap and connections: past a few per core they add memory,
      # not throughput (raise `concurrency` instead). The floor serves containers showing 1-2 cores.
      # @returns [Integer]
      def self.max = [PER_CORE * Etc.nprocessors, LEAST_MAX].max

      # How many processes a `processes` setting means.
      # @parameter setting [Integer | String] a count, or "auto" for one per core.
      # @returns [Integer]
      def self.count(setting) = (setting == "auto") ? Etc.nprocessors : setting

      # @parameter count [Integer] the number of server processes to keep running, from 1 to `max`.
      # @parameter stop_timeout [Numeric] seconds after the first stop signal before children still
      #   alive are killed.
      # @parameter config [Config] the settings the children run with: their identities and the
      #   recovery need them.
      # @raises [ArgumentError] when count is not from 1 to `max`.
      def initialize(count:, stop_timeout:, config:, logger:)
        unless count.between?(1, Supervisor.max)
          raise ArgumentError,
            "count must be from 1 to #{Supervisor.max} (got #{count})"
        end
        @count = count
        @stop_timeout = stop_timeout
        @config = config
        @logger = logger
        @children = {}
        @delays = Hash.new(0.0)
        @restarts = {}
        @stop_deadline = nil
        @quiet = false
        @failed = false
      end

      # Forks the children and supervises them until every one has stopped.
      # @yields {|identity| ...} runs one server in a child; its value is the child's exit status.
      # @returns [Integer] 0 when every child stopped cleanly, else 1.
      def run(&server)
        @server = server
        @reader, @writer = IO.pipe
        # The children read the lifeline; only this process writes, so they see EOF once it is gone.
        @lifeline, @life = IO.pipe
        previous = trap_signals
        @logger.info("supervisor: starting #{@count} server processes")
        @count.times { |slot| @restarts[slot] = now }
        supervise
        @failed ? 1 : 0
      ensure
        previous&.each { |signal, handler| trap(signal, handler) }
        [@reader, @writer, @lifeline, @life].each { |io| io&.close }
        @store&.close
      end

      private

      def trap_signals
        (FORWARDED + IGNORED + ["CHLD"]).to_h do |signal|
          [
            signal,
            trap(signal) do
              @writer.write_nonblock("#{signal}\n", exception: false)
            end
          ]
        end
      end

      # One fork at most per turn, so that a signal is read between two forks.
      def supervise
        until @children.empty? && @restarts.empty?
          read_signals.each { |signal| handle(signal) }
          reap
          restart_due
          kill_late
        end
      end

      # Waits for a signal, a restart or the stop deadline; returns the signals that came.
      def read_signals
        return [] unless IO.select([@reader], nil, nil, wait_time)
        names = @reader.read_nonblock(4096, exception: false)
        names.is_a?(String) ? names.split : []
      end

      # Seconds until the next restart or the stop deadline (at most one: a missed signal costs
      # little).
      def wait_time
        times = [*@restarts.values, @stop_deadline].compact
        times.empty? ? 1.0 : (times.min - now).clamp(0.0, 1.0)
      end

      def handle(signal)
        case signal
        when "INT", "TERM" then stop(signal)
        when "TSTP" then quiet
        when "TTIN" then dump
        when *IGNORED then ignored(signal)
        end
      end

      def ignored(signal)
        @logger.info(
          "supervisor: SIG#{signal} ignored (TERM stops, TSTP quiets)"
        )
      end

      def stop(signal)
        @logger.info(
          "supervisor: #{signal}, stopping #{@children.size} server processes"
        )
        @stop_deadline ||= now + @stop_timeout
        @restarts.clear
        forward(signal)
      end

      def quiet
        @quiet = true
        forward("TSTP")
      end

      def dump
        @logger.info(
          "supervisor: server processes #{@children.keys.join(", ")}"
        )
        forward("TTIN")
      end

      def forward(signal)
        @children.each_key do |pid|
          Process.kill(signal, pid)
        rescue Errno::ESRCH
          nil # a child that just died; reaped next
        end
      end

      # Waits for its own children only: a program that runs a supervisor may have other children.
      def reap
        @children.keys.each do |pid|
          _, status = Process.wait2(pid, Process::WNOHANG)
          exited(pid, @children.delete(pid), status) if status
        rescue Errno::ECHILD
          @children.delete(pid)
        end
      end

      def exited(pid, child, status)
        recover(pid, child) unless status.success? || before_traps?(status)
        if @stop_deadline
          stopped(pid, status)
        elsif status.exitstatus == STOPPED_ON_REQUEST
          left = @children.size
          @logger.info(
            "supervisor: process #{pid} stopped on request; " \
            "not replaced (#{left} left)"
          )
        else
          died(pid, child, status)
        end
      end

      # Puts the jobs a child held in flight back in their queues now; when the store cannot be
      # reached, the reapers of live processes do it once the registration expires.
      def recover(pid, child)
        reaper.recover(child.process)
      rescue => error
        @logger.error(
          "supervisor: could not recover the jobs of process #{pid} " \
          "(#{error.class}: #{error.message}); a live process's reaper will"
        )
      end

      # Loaded once needed: the CLI loads this file to check `-p` before anything else.
      def reaper
        require_relative "reaper"
        @reaper ||= Reaper.new(
          store: store, process: "supervisor", config: @config, logger: @logger
        )
      end

      def store = @store ||= Store.dedicated(@config)

      def stopped(pid, status)
        requested = status.exitstatus == STOPPED_ON_REQUEST
        @failed ||= !(status.success? || requested || before_traps?(status))
        @logger.info("supervisor: process #{pid} stopped (#{reason(status)})")
      end

      # Whether a TERM or INT ended the child before its own traps were set, so before it held a job.
      def before_traps?(status)
        status.signaled? &&
          %w[TERM INT].include?(Signal.signame(status.termsig))
      end

      def died(pid, child, status)
        lived = now - child.started_at
        delay = @delays[child.slot] = next_delay(child.slot, lived)
        if @quiet
          @failed = true
          @logger.error(
            "supervisor: process #{pid} died (#{reason(status)}); " \
            "not replaced while quiet"
          )
        else
          @logger.error(
            format(
              "supervisor: process %d died (%s) after %.1f s; " \
              "replacing it in %.1f s",
              pid, reason(status), lived, delay
            )
          )
          @restarts[child.slot] = now + delay
        end
      end

      def next_delay(slot, lived)
        (lived >= STEADY) ?
          0.0 :
          (@delays[slot] * 2).clamp(FIRST_DELAY, MAX_DELAY)
      end

      def reason(status)
        return "exit status #{status.exitstatus}" unless status.signaled?
        "killed by SIG#{Signal.signame(status.termsig)}"
      end

      def restart_due
        slot, at = @restarts.min_by { |_, time| time }
        return unless slot && at <= now
        @restarts.delete(slot)
        spawn(slot)
      end

      def kill_late
        return unless @stop_deadline && now > @stop_deadline && @children.any?
        pids = @children.keys.join(", ")
        @logger.error(
          "supervisor: processes #{pids} did not stop in time; killing them"
        )
        forward("KILL")
        @failed = true
        @stop_deadline = now + 1
      end

      # The child's name and start time are chosen here: its id is then known from its pid.
      def spawn(slot)
        seed = {name: Identity.new_name, started_at: Time.now.to_i}
        @store&.close # not shared with the child; opened again when next needed
        pid = fork { run_child(seed) }
        @children[pid] = Child.new(
          slot, now, Identity.new(@config, **seed, pid: pid).id
        )
        @logger.info(
          "supervisor: process #{pid} started (#{slot + 1} of #{@count})"
        )
      rescue SystemCallError => error
        @logger.error("supervisor: could not fork: #{error.message}; " \
          "trying again in #{MAX_DELAY} s")
        @restarts[slot] = now + MAX_DELAY
      end

      # In the child: the server sets its own traps; until then TERM and INT end it (it holds no job
      # yet) and the other signals are ignored. `exit!` skips the at_exit hooks the parent
      # registered, which are the parent's to run.
      def run_child(seed)
        %w[TERM INT].each { |signal| trap(signal, "SYSTEM_DEFAULT") }
        (%w[TSTP TTIN] + IGNORED).each { |signal| trap(signal, "IGNORE") }
        trap("CHLD", "DEFAULT")
        [@reader, @writer, @life].each(&:close)
        watch_supervisor
        status = serve(seed)
        $stdout.flush
        $stderr.flush
        exit!(status)
      end

      # Runs the server in the child, which ends here whatever happens.
      # @returns [Integer] its exit status.
      def serve(seed)
        @server.call(Identity.new(@config, **seed))
      rescue SystemExit => exit
        exit.status
      rescue Exception => error # rubocop:disable Lint/RescueException
        @logger.error("server process failed: #{error.class}: #{error.message}")
        1
      end

      # In the child: the read returns (end of file) once the supervisor is gone, however it ended;
      # the child then stops as on TERM rather than run on unsupervised.
      def watch_supervisor
        lifeline = @lifeline
        logger = @logger
        thread = Thread.new do
          lifeline.read(1)
          logger.error(
            "server process #{Process.pid}: the supervisor is gone; stopping"
          )
          Process.kill("TERM", Process.pid)
        end
        thread.name = "jiggler.lifeline"
      end

      def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end

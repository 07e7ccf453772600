# frozen_string_literal: true

require "rbconfig"
require_relative "config"
require_relative "config/yaml_file"

module Jiggler
  # A jiggler server run beside another long-lived process (Puma, through `plugin :jiggler`), as a child process it
  # starts, watches and stops. The child is a fresh `jiggler -r APP` (spawned: forked, then exec'd), so it shares no
  # thread, connection or listening socket with its parent.
  #
  # A child that dies is started again, at once if it had run for `young` seconds, else after a pause that doubles
  # (1 s, 2 s, 4 s ...) while children keep dying young. After `give_up_after` young deaths in a row the sidecar stops
  # trying and calls `on_give_up` (the Puma plugin then stops Puma, so that a supervisor or orchestrator restarts the
  # whole, instead of a web server running on with no jobs worked). A child stopped on request (`jiggler stop`, the
  # dashboard's Stop button: exit status 3) is not started again.
  class Sidecar
    EXE = File.expand_path("../../exe/jiggler", __dir__)
    # The exit status of a server stopped through the store (Server::Supervisor::STOPPED_ON_REQUEST).
    STOPPED_ON_REQUEST = 3
    # Seconds a stopping server may take past its `timeout` before it exits on its own (CLI::STOP_GRACE, 4.5 s), and
    # one more before it is killed.
    STOP_GRACE = 5.5

    # The command that runs a server for the app in `dir`, through the bundle when there is one.
    # @parameter dir [String] the app's directory (`-r DIR`).
    # @returns [Array(String)]
    def self.command(dir)
      [
        RbConfig.ruby,
        *("-rbundler/setup" if defined?(::Bundler)),
        EXE,
        "-r",
        dir
      ]
    end

    # Seconds to give a stopping server: its `timeout` (config/jiggler.yml's for the environment, if the file sets
    # one, else the default) and its grace.
    # @parameter environment [String]
    # @returns [Numeric]
    def self.stop_timeout(environment, path: "config/jiggler.yml")
      timeout = (
        Config::YAMLFile.load(path, environment)[:timeout] if File.file?(path)
      )
      (timeout || Config::DEFAULTS[:timeout]) + STOP_GRACE
    end

    # @parameter command [Array(String)] the child's command line.
    # @parameter log [#call] receives one line of text for each start, death and decision.
    # @parameter on_give_up [#call] called, from the watching thread, when children keep dying young.
    def initialize(
      command:, log:, on_give_up:, env: {}, young: 30, give_up_after: 5
    )
      @command = command
      @env = env
      @log = log
      @on_give_up = on_give_up
      @young = young
      @give_up_after = give_up_after
      @mutex = Thread::Mutex.new
      @wakeup = Thread::ConditionVariable.new
      @stopping = false
      @pid = nil
    end

    # Starts the child, and a thread that waits for it and starts it again when it dies.
    # @returns [Sidecar] self.
    def start
      @thread = Thread.new { watch }
      @thread.name = "jiggler.sidecar"
      self
    end

    # The running child's process id, or nil between children.
    # @returns [Integer | Nil]
    def pid = @mutex.synchronize { @pid }

    # Stops the child for good: TERM (the server finishes or requeues its jobs), then KILL if it is still running
    # after `timeout` seconds. Returns once the child is gone. It may be called from a signal handler (Puma's single
    # mode stops from its trap), where no mutex can be taken: the work runs in a thread of its own.
    # @parameter timeout [Numeric]
    def stop(timeout)
      Thread.new { stop_child(timeout) }.join
    end

    private

    def stop_child(timeout)
      @mutex.synchronize do
        @stopping = true
        @wakeup.signal
      end
      signal("TERM")
      return if @thread.join(timeout)
      @log.call(
        "jiggler server pid #{pid} still running #{timeout} s after TERM: " \
        "killing it"
      )
      signal("KILL")
      @thread.join
    end

    def stopping? = @mutex.synchronize { @stopping }

    def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

    def watch
      young_deaths = 0
      until stopping?
        started = now
        status = run_child
        break if stopping? || status&.exitstatus == STOPPED_ON_REQUEST
        young_deaths = (now - started < @young) ? young_deaths + 1 : 0
        return give_up(young_deaths) if young_deaths >= @give_up_after
        pause(young_deaths.zero? ? 0 : 2**(young_deaths - 1))
      end
    end

    # Runs one child to its end. @returns [Process::Status | Nil] nil when another waiter reaped it.
    def run_child
      pid = spawn_child
      return unless pid
      @log.call("jiggler server started, pid #{pid}")
      status = wait(pid)
      @mutex.synchronize { @pid = nil }
      unless stopping?
        @log.call(
          "jiggler server pid #{pid} exited " \
          "(#{status&.inspect || "status unknown"})"
        )
      end
      status
    end

    def spawn_child
      @mutex.synchronize do
        @pid = Process.spawn(@env, *@command) unless @stopping
      end
    end

    def wait(pid)
      Process.wait2(pid).last
    rescue Errno::ECHILD
      # reaped by another waiter: Puma's cluster mode reaps every child of its master
      nil
    end

    def pause(seconds)
      @mutex.synchronize do
        @wakeup.wait(@mutex, seconds) unless @stopping || seconds.zero?
      end
    end

    def give_up(deaths)
      @log.call(
        "jiggler server died #{deaths} times in a row within #{@young} s " \
        "of starting: giving up"
      )
      @on_give_up.call
    end

    def signal(name)
      @mutex.synchronize { Process.kill(name, @pid) if @pid }
    rescue Errno::ESRCH
      nil
    end
  end
end

# frozen_string_literal: true

require "logger"
require "stringio"
require "tmpdir"
require "fileutils"
require "async"
require_relative "store_target"
require_relative "breakable_store"

# What the tests of the server's background loops share: the test's store (Redis in the test's namespace, or an
# SQLite file of its own: see StoreTarget), stores on connections of their own, a store that fails on demand
# (BreakableStore), a logger whose lines the test reads, and a reactor to run a loop in. No server process is started.
module LoopTest
  def target_name = "redis"

  def setup
    super
    @dir = Dir.mktmpdir("jiggler-loop")
    @target = StoreTarget.build(target_name, namespace: @namespace, dir: @dir)
    Jiggler.configure { |config| @target.configure(config) }
    @log = StringIO.new
    @stores = []
  end

  def teardown
    @stores.each(&:close)
    @breakable&.stop
    Jiggler.configure { |_config| nil } # closes the test's client
    @target.close
    FileUtils.rm_rf(@dir)
    super
  end

  # A logger writing "SEVERITY: message" lines the test reads with `logged`.
  def logger
    @logger ||= Logger.new(
      @log,
      formatter: ->(severity, _, _, message) { "#{severity}: #{message}\n" }
    )
  end

  # The lines logged so far that match a pattern.
  def logged(pattern) = @log.string.lines.grep(pattern)

  # A store of the test's own connection (as each loop has), closed after the test.
  def build_store
    Jiggler::Store.dedicated(Jiggler.config).tap { |store| @stores << store }
  end

  # The test's store that fails on demand.
  def breakable
    @breakable ||=
      BreakableStore.build(target_name, namespace: @namespace, dir: @dir)
  end

  # Runs the block in a reactor, failing the test after `timeout` seconds.
  def in_reactor(timeout: 10)
    Sync do |task|
      task.with_timeout(timeout) { yield task }
    ensure
      # a loop left running (the test failed) would keep the reactor, and the test, waiting
      task.children&.each(&:stop)
    end
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

# frozen_string_literal: true

# Fails a test that runs longer than TEST_TIMEOUT seconds (default 180) instead of letting the whole suite hang: it
# prints every thread's backtrace, to show where the test was stuck, then raises in the test's thread, so the test
# fails, its teardown stops its servers, and the suite goes on. A test that the raise cannot reach (stuck in a C call)
# ends the run a minute later with SIGTERM, which still runs the suite's at_exit cleanup.
module Watchdog
  LIMIT = Float(ENV.fetch("TEST_TIMEOUT", "180"))

  class TestTimeout < RuntimeError; end

  def run
    test_thread = Thread.current
    watchdog = Thread.new do
      sleep LIMIT
      warn "\n#{self.class}##{name} still running after #{LIMIT} s; " \
        "every thread's backtrace:"
      Thread.list.each do |thread|
        warn "#{thread.inspect}\n    #{Array(thread.backtrace).join("\n    ")}"
      end
      test_thread.raise(
        TestTimeout, "the test ran longer than #{LIMIT} s (TEST_TIMEOUT)"
      )
      sleep 60
      warn "#{self.class}##{name} did not stop when interrupted; ending the run"
      Process.kill("TERM", Process.pid)
    end
    super
  ensure
    watchdog&.kill
  end
end

# frozen_string_literal: true

# Waits for a condition instead of sleeping for a guessed time.
module Waiting
  # Returns the block's first truthy value, polling every 20 ms; fails the test after `timeout` seconds.
  def wait_for(timeout: 10, message: "condition")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      value = yield
      return value if value
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        flunk("timed out after #{timeout} s waiting for #{message}")
      end
      sleep 0.02
    end
  end
end

# frozen_string_literal: true

# The jobs of the quick start. `jiggler -r ./examples/jobs.rb` loads this file to know them.
require "jiggler"

# A namespace of its own, so the example never touches other jiggler data in the same Redis.
Jiggler.configure { |config| config[:namespace] = "jiggler-example" }

# Adds two numbers and writes the sum to the log.
class SumJob
  include Jiggler::Job

  job_options queue: "math", retries: 3

  def perform(a, b)
    logger.info("#{a} + #{b} = #{a + b}") if (a % 250).zero?
  end
end

# Waits like a job that calls an HTTP API would; fibers run many of these at once.
class SlowApiJob
  include Jiggler::Job

  def perform(milliseconds)
    sleep(milliseconds / 1000.0)
  end
end

# Fails on its first run, like a flaky network call, and lands in the retry set.
class FlakyJob
  include Jiggler::Job

  job_options retries: 1

  def perform(name)
    raise "#{name}: connection reset by peer (on purpose)"
  end
end

# frozen_string_literal: true

# One shard of `rake test` (test/support/test_shards.rb): `ruby test/support/shard.rb FILE... [-- MINITEST_OPTIONS]`
# loads the test files and runs their tests in this process, as rake's test loader does, then writes the time each
# file's tests took (setup and teardown included) as JSON to the file JIGGLER_TEST_TIMES names.
require "json"

files, options = ARGV.slice_after("--").to_a
  .then { |head, tail = []| [head - ["--"], tail] }
ARGV.replace(options) # what Minitest's autorun reads

require "minitest"

module Minitest
  # Sums each test file's test times.
  class FileTimes < AbstractReporter
    def initialize(files_of, path)
      super()
      @files_of = files_of
      @path = path
      @times = Hash.new(0.0)
    end

    def record(result)
      @times[@files_of.fetch(result.klass, "unknown")] += result.time
    end

    def report
      File.write(
        @path,
        JSON.generate(@times.transform_values { |seconds| seconds.round(2) })
      )
    end
  end

  FILES_OF = {} # test class name => the file that defined it

  def self.plugin_file_times_init(_options)
    if ENV["JIGGLER_TEST_TIMES"]
      reporter << FileTimes.new(FILES_OF, ENV.fetch("JIGGLER_TEST_TIMES"))
    end
  end
end
Minitest.register_plugin("file_times")

files.each do |file|
  known = Minitest::Runnable.runnables.dup
  require File.expand_path(file)
  (Minitest::Runnable.runnables - known).each do |runnable|
    Minitest::FILES_OF[runnable.name] = file
  end
end

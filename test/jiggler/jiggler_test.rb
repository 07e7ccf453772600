# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"

describe Jiggler do
  # Runs Ruby code in a fresh process with lib/ on the load path; returns its exit status and output.
  def run_ruby(code)
    output, status = Open3.capture2e(
      RbConfig.ruby,
      "-Ilib",
      "-e",
      code,
      chdir: File.expand_path("../..", __dir__)
    )
    [status.exitstatus, output]
  end

  it "does not load Async with require 'jiggler'" do
    status, output =
      run_ruby('require "jiggler"; exit(defined?(Async) ? 1 : 0)')
    assert_equal 0, status, "Async was loaded by require \"jiggler\"\n#{output}"
  end

  it "does not load Async to enqueue, summarize or clean " \
    "with the default client" do
    code = <<~RUBY
      require "jiggler"
      class NoAsyncJob; include Jiggler::Job; end
      Jiggler.configure { |config| \
      config[:redis_url] = #{RedisServer.instance.url.dump}; \
      config[:namespace] = #{@namespace.dump} }
      NoAsyncJob.enqueue(1)
      exit(1) unless Jiggler.summary["queues"] == {"default" => 1}
      Jiggler.config.cleaner.prune_all
      exit(defined?(Async) ? 2 : 0)
    RUBY
    status, output = run_ruby(code)
    assert_equal 0, status, output
    assert_empty Jiggler.summary["queues"]
  end

  it "loads neither redis-client nor server code to enqueue, " \
    "batch and clean on SQLite" do
    code = <<~RUBY
      require "jiggler"
      require "tmpdir"
      class SQLiteOnlyJob; include Jiggler::Job; job_options batch_size: 2; \
      def perform_batch(args_list) = nil; end
      Dir.mktmpdir do |dir|
        Jiggler.configure { |config| config[:redis_url] = nil; config[:sqlite_path] = File.join(dir, "jobs.sqlite3") }
        SQLiteOnlyJob.enqueue_bulk([[1], [2], [3]])
        exit(1) unless Jiggler.summary["queues"] == {"default" => 1}
        Jiggler.config.cleaner.prune_all
      end
      loaded = $LOADED_FEATURES.grep(%r{redis-client|/jiggler/server/})
      exit(loaded.empty? ? 0 : 2)
    RUBY
    status, output = run_ruby(
      code.sub(
        "require \"jiggler\"",
        "ENV.delete(\"REDIS_URL\"); require \"jiggler\""
      )
    )
    assert_equal 0, status, output
  end

  it "forgets its settings and client with reset!" do
    client = Jiggler.client
    Jiggler.configure { |config| config[:concurrency] = 3 }
    Jiggler.reset!
    assert_equal Jiggler::Config::DEFAULTS[:concurrency],
      Jiggler.config[:concurrency]
    refute_same client, Jiggler.client
  end

  it "has a version" do
    assert_match(/\A\d+\.\d+\.\d+/, Jiggler::VERSION)
  end

  it "builds a new client when configured again" do
    client = Jiggler.client
    assert_same client, Jiggler.client
    Jiggler.configure { |config| config[:client_concurrency] = 2 }
    refute_same client, Jiggler.client
  end

  it "enqueues into the configured namespace" do
    RecordJob.enqueue(1)
    other = Jiggler::Store::Redis.new(
      pool: redis, namespace: "#{@namespace}-other"
    )
    assert_equal({"default" => 1}, Jiggler.summary["queues"])
    assert_empty other.queue_sizes
  end

  it "lets the client be replaced" do
    custom = Jiggler::Client.new(
      Jiggler::Store::Redis.new(pool: redis, namespace: "#{@namespace}-custom")
    )
    Jiggler.client = custom
    RecordJob.enqueue(1)
    assert_equal({"default" => 1}, custom.store.queue_sizes)
    custom.store.clear_all
  end

  it "lets the logger be replaced" do
    output = StringIO.new
    Jiggler.logger = Logger.new(output)
    RecordJob.new.logger.info("from a job")
    assert_includes output.string, "from a job"
  end
end

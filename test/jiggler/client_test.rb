# frozen_string_literal: true

require "test_helper"
require "json"
require "async"
require "connection_pool"

module ClientTest
  UNREACHABLE_URL = "redis://127.0.0.1:1/0"

  # A pool that lends one connection and counts the loans, as a minimal Async::Pool stand-in.
  class CountingPool
    attr_reader :loans

    def initialize(url)
      @client = RedisClient.new(url: url)
      @loans = 0
    end

    def acquire
      @loans += 1
      yield @client
    end
  end
end

describe Jiggler::Client do
  # Reads the test namespace through a plain connection, whatever pool the client uses.
  def plain_store
    Jiggler::Store::Redis.new(pool: redis, namespace: @namespace)
  end

  def queued(queue = "default")
    plain_store
      .queue_entries(queue, limit: 1000)
      .map { |json| JSON.parse(json) }
  end

  def use_async_client
    Jiggler.configure { |config| config[:client_async] = true }
  end

  describe "#push" do
    it "writes due jobs to the queue with their options and times" do
      jids = Jiggler.client.push(
        "RecordJob", [[1], [2]], {queue: "q", retries: 4, retry_queue: "rq"}
      )
      assert_equal jids, queued("q").map { |job| job["jid"] }
      job = queued("q").first
      assert_equal ["RecordJob", [1], "q", 4, "rq"],
        job.values_at("name", "args", "queue", "retries", "retry_queue")
      assert_in_delta Time.now.to_f, job["created_at"], 5
      assert_equal job["created_at"], job["enqueued_at"]
    end

    it "writes later jobs to the scheduled set without an enqueued_at" do
      at = Time.now.to_f + 30
      jid = Jiggler.client
        .push("RecordJob", [[1]], {queue: "q", retries: 1}, at: at)
        .first
      payload, score = store.set_entries(:scheduled).first
      assert_equal [jid, false],
        [JSON.parse(payload)["jid"], JSON.parse(payload).key?("enqueued_at")]
      assert_in_delta at, score, 0.001
      refute JSON.parse(payload).key?("retry_queue")
    end
  end

  describe "with the default client" do
    it "raises a ConnectionError naming Redis when it cannot connect" do
      Jiggler.configure do |config|
        config[:redis_url] = ClientTest::UNREACHABLE_URL
      end
      error = assert_raises(Jiggler::Store::Redis::ConnectionError) do
        RecordJob.enqueue(1)
      end
      assert_match(/unreachable/, error.message)
    end

    it "is safe to share between threads" do
      threads = Array.new(8) do |t|
        Thread.new { 25.times { |n| RecordJob.enqueue(t, n) } }
      end
      threads.each(&:join)
      args = queued.map { |job| job["args"] }
      assert_equal 200, args.size
      assert_equal (0...8).to_a.product((0...25).to_a).sort, args.sort
    end

    it "is rebuilt when the configuration changes" do
      RecordJob.enqueue(1)
      Jiggler.configure { |config| config[:namespace] = "#{@namespace}-other" }
      RecordJob.enqueue(2)
      assert_equal [[1]], queued.map { |job| job["args"] }
      assert_equal({"default" => 1}, Jiggler.summary["queues"])
      Jiggler.config.cleaner.prune_all
    end
  end

  describe "with client_async" do
    it "enqueues inside Sync" do
      use_async_client
      jid = Sync { RecordJob.enqueue(1) }
      assert_equal [jid], queued.map { |job| job["jid"] }
    end

    it "enqueues inside Async and in reactors run one after another" do
      use_async_client
      Async { RecordJob.enqueue(1) }.wait
      Sync { RecordJob.enqueue_bulk([[2], [3]]) }
      Sync { |task| task.async { RecordJob.enqueue_in(60, 4) }.wait }
      assert_equal [[1], [2], [3]], queued.map { |job| job["args"] }
      assert_equal 1, Sync { Jiggler.summary["scheduled_jobs_count"] }
    end

    it "lets other fibers run while an enqueue waits on Redis" do
      use_async_client
      Sync { Jiggler.store.ping } # connects outside the test
      # Redis holds writes until this test unpauses it
      redis.call("CLIENT", "PAUSE", 3000, "WRITE")
      done = []
      seen_in_flight = nil
      Sync do |task|
        task.with_timeout(10) do
          enqueues = [1, 2].map do |n|
            task.async { RecordJob.enqueue(n).tap { done << n } }
          end
          # both enqueues are waiting: only a fiber-aware client lets this run
          seen_in_flight = done.empty?
          redis.call("CLIENT", "UNPAUSE")
          enqueues.each(&:wait)
        end
      end
      assert seen_in_flight,
        "the enqueues blocked the reactor until Redis answered"
      assert_equal [1, 2], done.sort
      assert_equal [[1], [2]], queued.map { |job| job["args"] }.sort
    ensure
      redis.call("CLIENT", "UNPAUSE")
    end
  end

  describe "with a client_redis_pool" do
    it "uses a pool that responds to #acquire" do
      pool = ClientTest::CountingPool.new(RedisServer.instance.url)
      Jiggler.configure do |config|
        config[:redis_url] = ClientTest::UNREACHABLE_URL
        config[:client_redis_pool] = pool
      end
      jid = RecordJob.enqueue(1)
      assert_equal [jid], queued.map { |job| job["jid"] }
      assert_operator pool.loans, :>=, 1
    end

    it "uses a ConnectionPool" do
      pool = ConnectionPool.new(size: 2) do
        RedisClient.new(url: RedisServer.instance.url)
      end
      Jiggler.configure_client do |config|
        config[:redis_url] = ClientTest::UNREACHABLE_URL
        config[:client_redis_pool] = pool
      end
      RecordJob.enqueue_bulk([[1], [2]])
      assert_equal [[1], [2]], queued.map { |job| job["args"] }
      assert_equal 2, Jiggler.summary["queues"]["default"]
    end

    it "uses an async pool inside a reactor" do
      require "async/pool"
      config = RedisClient.config(url: RedisServer.instance.url)
      pool = Async::Pool::Controller.wrap(limit: 2) do
        Jiggler::Store::Redis::Connection::Pooled.new(config)
      end
      Jiggler.configure_client do |settings|
        settings[:redis_url] = ClientTest::UNREACHABLE_URL
        settings[:client_redis_pool] = pool
      end
      Sync { RecordJob.enqueue(1) }
      assert_equal [[1]], queued.map { |job| job["args"] }
    end
  end
end

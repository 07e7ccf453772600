# frozen_string_literal: true

require "test_helper"
require "async"
require "jiggler/server/processor"
require "jiggler/server/cron"
require "jiggler/store/fetched"

# Middleware for the client and server chains, as an app would write them.
module MiddlewareTest
  SEEN = []

  # Adds a field to every job and skips the jobs whose first argument is "skip".
  class Stamp
    def initialize(tenant) = @tenant = tenant

    def call(job, queue)
      SEEN << [:client, job["name"], queue, job.key?("at")]
      return if job["args"].first == "skip"
      job["tenant"] = @tenant
      yield
    end
  end

  class UniqueWork
    include Jiggler::Job

    job_options unique: true, concurrency: {limit: 2}

    def perform(value) = SEEN << [:perform, value]
  end

  class Around
    def call(instance, job, queue)
      SEEN << [:before, instance.class.name, job["tenant"], queue]
      yield.tap { SEEN << [:after, instance.jid] }
    end
  end

  class Work
    include Jiggler::Job

    def perform(value) = SEEN << [:perform, value]
  end
end

describe "middleware" do
  before { MiddlewareTest::SEEN.clear }

  def queued(queue = "default")
    store.queue_entries(queue).map { |json| Jiggler::Payload.load(json) }
  end

  describe "the client chain" do
    before do
      Jiggler.configure do |config|
        config.client_middleware do |chain|
          chain.add(MiddlewareTest::Stamp, "acme")
        end
      end
    end

    it "runs around enqueue, adding fields to the stored job" do
      jid = MiddlewareTest::Work.enqueue("a")
      job = queued.first
      assert_equal [jid, "acme", ["a"]], job.values_at("jid", "tenant", "args")
      assert_equal [[:client, "MiddlewareTest::Work", "default", false]],
        MiddlewareTest::SEEN
    end

    it "runs around the enqueue of unique and limited jobs too, " \
      "which keep their lock and limit keys" do
      jid = MiddlewareTest::UniqueWork.enqueue("a")
      assert_nil MiddlewareTest::UniqueWork.enqueue("a"), "the lock is taken"
      assert_nil MiddlewareTest::UniqueWork.enqueue("skip"),
        "stopped by the middleware"
      job = queued.first
      assert_equal [jid, "acme"], job.values_at("jid", "tenant")
      assert_equal ["unique", "limits"], job.slice("unique", "limits").keys
      assert_equal 1, queued.size
    end

    it "stops a push when a middleware does not yield: nil instead of an id" do
      jids = MiddlewareTest::Work.enqueue_bulk([["skip"], ["b"], ["skip"]])
      assert_equal [nil, String, nil], jids.map { |jid| jid&.class }
      assert_equal [["b"]], queued.map { |job| job["args"] }
    end

    it "runs around scheduled jobs and other queues too" do
      MiddlewareTest::Work.enqueue_in(60, "later")
      MiddlewareTest::Work.with_options(queue: "other").enqueue("now")
      assert_equal [true, false], MiddlewareTest::SEEN.map(&:last)
      assert_equal "acme", queued("other").first["tenant"]
      assert_equal 1, Jiggler.summary["scheduled_jobs_count"]
    end

    it "runs around a recurring task's tick, which a server's Cron " \
      "enqueues, and can stop it" do
      tasks = {"go" => ["r"], "stop" => ["skip"]}.to_h do |name, args|
        [
          name,
          Jiggler::RecurringTask.build(
            name,
            {
              "class" => "MiddlewareTest::Work",
              "args" => args,
              "schedule" => "every second"
            }
          )
        ]
      end
      cron_store = Jiggler::Store.dedicated(Jiggler.config)
      cron = Jiggler::Server::Cron.new(
        store: cron_store,
        tasks: tasks,
        missed: :skip,
        interval: 1,
        logger: Logger.new(File::NULL),
        middleware: Jiggler.config.client_middleware
      )
      Sync do |task|
        cron.start(parent: task)
        wait_for(message: "a tick") { queued.any? }
        cron.stop
      end
      assert_equal [[["r"], "acme"]],
        queued.map { |job| job.values_at("args", "tenant") }.uniq
      assert_equal [[:client, "MiddlewareTest::Work", "default", false]],
        MiddlewareTest::SEEN.uniq
      assert_equal 2 * queued.size, MiddlewareTest::SEEN.size,
        "once per task and tick"
    end
  end

  describe "the job wrapper" do
    it "runs around the whole job, from the lookup of its class " \
      "to its failure record" do
      wrapper = Object.new
      def wrapper.call
        MiddlewareTest::SEEN << :enter
        yield.tap do |outcome|
          MiddlewareTest::SEEN << [
            :leave,
            outcome.is_a?(Jiggler::Store::Failed) ? outcome.set : outcome
          ]
        end
      end
      Jiggler.configure { |config| config.job_wrapper = wrapper }
      processor = Jiggler::Server::Processor.new(
        logger: Logger.new(File::NULL),
        results: nil,
        config: Jiggler.config.freeze
      )
      run = ->(name) {
        processor.call(
          Jiggler::Store::Fetched.new(
            1,
            "q",
            Jiggler::Payload.dump(
              {"jid" => "j", "name" => name, "args" => [2]}
            )
          )
        )
      }
      run.call("MiddlewareTest::Work")
      run.call("MiddlewareTest::Missing")
      assert_equal(
        [:enter, [:perform, 2], [:leave, :done], :enter, [:leave, :retry]],
        MiddlewareTest::SEEN
      )
    end

    it "must respond to call" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.config.job_wrapper = :executor
      end
      assert_includes error.message, "job_wrapper must respond to #call"
    end
  end

  describe "the server chain" do
    it "runs around perform with the job instance, its payload and queue" do
      Jiggler.configure do |config|
        config.server_middleware { |chain| chain.add(MiddlewareTest::Around) }
      end
      processor = Jiggler::Server::Processor.new(
        logger: Logger.new(File::NULL),
        results: nil,
        config: Jiggler.config.freeze
      )
      payload = Jiggler::Payload.dump(
        {
          "jid" => "j1",
          "name" => "MiddlewareTest::Work",
          "args" => [1],
          "tenant" => "t"
        }
      )
      assert_equal Jiggler::Server::Processor::DONE,
        processor.call(Jiggler::Store::Fetched.new(1, "critical", payload))
      expected = [
        [:before, "MiddlewareTest::Work", "t", "critical"],
        [:perform, 1],
        [:after, "j1"]
      ]
      assert_equal expected, MiddlewareTest::SEEN
    end
  end
end

# frozen_string_literal: true

require "async"
require "tmpdir"
require "fileutils"
require_relative "../../fixtures/batch_jobs"

# Batch jobs and results through real `jiggler` processes, the same specs on each store. A spec class includes it and
# defines `use_store` (points this process's client at the store) and `store_env` (the servers' environment).
module BatchEndToEnd
  def self.included(base)
    base.class_eval do
      before do
        @dir = Dir.mktmpdir("jiggler-batch")
        @record = File.join(@dir, "record.txt")
        use_store
      end

      after do
        unless passed?
          warn(
            @servers.map { |server|
              "--- server #{server.pid} log:\n#{server.log}"
            }.join("\n")
          )
        end
        @servers.each(&:kill)
        FileUtils.rm_rf(@dir)
      end
    end
    base.extend(Specs)
    base.describe_batches
    base.describe_results
  end

  # The specs, as class methods so that `included` stays short.
  module Specs
    def describe_batches
      it "delivers items enqueued one at a time in full batches, " \
        "oldest first, and the rest after batch_interval" do
        jids = (1..25).map { |number| BatchJobs::Mailer.enqueue(number) }
        assert_equal 25, jids.uniq.size
        # two full batches formed at enqueue
        assert_equal({"default" => 2}, Jiggler.summary["queues"])
        assert_equal({"default" => {"BatchJobs::Mailer" => 5}},
          Jiggler.summary["batches"])
        start
        wait_for(message: "three batches") { lines("batch:").size == 3 }
        batches = lines("batch:").map do |line|
          line.delete_prefix("batch:").split(",").map(&:to_i)
        end
        assert_equal [(1..10).to_a, (11..20).to_a, (21..25).to_a], batches
        assert_equal [10] * 10 + [5] * 5,
          jids.first(10).map { |jid| Jiggler.result(jid, timeout: 5) } +
            jids.last(5).map { |jid| Jiggler.result(jid, timeout: 5) }
        wait_for(message: "the counters") do
          Jiggler.summary["processed_count"] == 3
        end
        assert_equal({}, Jiggler.summary["batches"])
      end

      it "retries a failed batch as a batch, with the same items" do
        start
        (1..5).each { |number| BatchJobs::Flaky.enqueue(number) }
        wait_for(message: "the failure") do
          Jiggler.summary["retry_jobs_count"] == 1
        end
        payload, = Jiggler.store.set_entries(:retry).first
        job = Jiggler::Payload.load(payload)
        assert_equal [[1], [2], [3], [4], [5]], job["args"]
        assert_equal 1, job["attempt"]
        # the retry is due now
        Jiggler.store.enqueue_due(Time.now.to_f + 3600) do |from, payload|
          Jiggler::JobRules.due(from, payload, Time.now.to_f)
        end
        wait_for(message: "the retry") { lines("ok:").any? }
        assert_equal ["fail:1,2,3,4,5", "ok:1,2,3,4,5"],
          lines("fail:") + lines("ok:")
      end

      it "delivers a batch again after kill -9 of the server running it" do
        first = start(env: {"BATCH_JOBS_SLOW" => "60"})
        (1..3).each { |number| BatchJobs::SlowBatch.enqueue(number) }
        wait_for(message: "the batch to start") { lines("start:").any? }
        Process.kill(:KILL, first.pid)
        first.wait
        start(env: {"BATCH_JOBS_RECOVERY_TIMEOUT" => "2"})
        wait_for(timeout: 20, message: "the batch to run again") do
          lines("done:").any?
        end
        assert_equal ["start:1,2,3", "start:1,2,3", "done:1,2,3"],
          lines("start:") + lines("done:")
        assert_equal 2, pids("start:").uniq.size
        wait_for(message: "the queue to be empty") do
          Jiggler.summary["queues"].empty? && Jiggler.summary["batches"].empty?
        end
      end

      it "puts scheduled items of a batch class in their batch " \
        "when they are due" do
        at = Time.now.to_f + 0.5
        (1..12).each { |number| BatchJobs::Mailer.enqueue_at(at, number) }
        assert_equal 12, Jiggler.summary["scheduled_jobs_count"]
        start
        wait_for(message: "two batches") { lines("batch:").size == 2 }
        batches = lines("batch:").map do |line|
          line.delete_prefix("batch:").split(",").map(&:to_i)
        end
        assert_equal [10, 2], batches.map(&:size)
        assert_equal (1..12).to_a, batches.flatten.sort
      end
    end

    def describe_results
      it "returns a job's result to another process, " \
        "waiting without blocking other fibers" do
        jid = BatchJobs::Double.enqueue(21)
        # booting takes a while: the wait below is long enough to see the other fiber run
        start(wait: false)
        ticks = 0
        value = Sync do |task|
          ticker = task.async do
            loop do
              ticks += 1
              sleep(0.01)
            end
          end
          Jiggler.result(jid, timeout: 10).tap { ticker.stop }
        end
        assert_equal 42, value
        assert_operator ticks, :>, 10
      end

      it "raises JobFailed with the error of a job that died, " \
        "and TimeoutError when there is no result" do
        start
        error = assert_raises(Jiggler::JobFailed) do
          Jiggler.result(BatchJobs::Broken.enqueue("no paper"), timeout: 10)
        end
        assert_equal "ArgumentError", error.error_class
        assert_includes error.message, "no paper"
        assert_raises(Jiggler::TimeoutError) do
          Jiggler.result("0" * 24, timeout: 0.2)
        end
        assert_raises(ArgumentError) { Jiggler.result(nil, timeout: 1) }
      end

      it "records a return value that is not JSON as the job's failure, " \
        "without retrying it" do
        start
        error = assert_raises(Jiggler::JobFailed) do
          Jiggler.result(BatchJobs::Opaque.enqueue, timeout: 10)
        end
        assert_includes error.message, "not JSON-native"
        assert_equal 0, Jiggler.summary["retry_jobs_count"]
      end
    end
  end

  def start(env: {}, wait: true)
    server = ServerProcess.new(
      "-r", "./test/fixtures/batch_jobs.rb", "-c", "5",
      namespace: @namespace,
      env: store_env.merge("BATCH_JOBS_RECORD_FILE" => @record).merge(env)
    ).start
    @servers << server
    return server unless wait
    wait_for(timeout: 20, message: "server start") do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, server.log
    server
  end

  # The recorded values that start with `prefix`, in order.
  def lines(prefix)
    records.filter_map { |value, _| value if value.start_with?(prefix) }
  end

  def pids(prefix)
    records.filter_map { |value, pid| pid if value.start_with?(prefix) }
  end

  def records = File.exist?(@record) ? File.readlines(@record).map(&:split) : []
end

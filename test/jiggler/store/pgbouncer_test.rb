# frozen_string_literal: true

require "test_helper"
require "async"
require "support/store_contract"
require "support/pgbouncer_server"
require_relative "../../fixtures/metrics_jobs"

# The PostgreSQL store behind PgBouncer in transaction mode (each transaction may run on another server connection):
# the whole store contract through the pooler. PgBouncer refuses the connections' startup options, so the store
# connects without them and says so.
describe "Jiggler::Store::Postgres behind PgBouncer (transaction mode)" do
  include StoreContract

  # Nothing is announced behind a pooler in transaction mode (LISTEN needs a session of its own): the servers' polls
  # find the work. The contract's announcement tests are left out here; the test below shows what a wait does.
  instance_methods(false)
    .grep(/\Atest_\d+_(wakes|waits on its first call)/)
    .each { |name| remove_method(name) }

  def build_store
    Jiggler::Store::Postgres.new(
      url: PgBouncerServer.instance.url,
      namespace: @namespace,
      pool_size: 4
    )
  end

  def teardown
    super
    PostgresServer.instance.drop_schema(@namespace)
  end

  it "says in its description that the timeouts are the role's" do
    pooled = build_store
    pooled.ping
    assert_match(
      /behind a pooler that refuses startup options/,
      pooled.description
    )
  ensure
    pooled&.close
  end

  it "wakes a server connected to the database itself when a client " \
    "pushes through the pooler" do
    direct = Jiggler::Store::Postgres.new(
      url: PostgresServer.instance.url,
      namespace: @namespace
    )
    pooled = build_store
    pooled.ping
    Sync do |task|
      assert_nil direct.wait_for_wake(0.05), "nothing waits yet"
      waiter = task.async { direct.wait_for_wake(5) }
      task.sleep(0.1)
      pooled.push("default", [
        Jiggler::Payload.dump({
          "jid" => "a" * 24,
          "name" => "X",
          "args" => [],
          "queue" => "default"
        })
      ])
      assert_equal :queues, waiter.wait
    end
  ensure
    direct&.close
    pooled&.close
  end

  it "waits out a wait for announcements, hearing none, " \
    "rather than failing" do
    waiting = build_store
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_nil Sync { waiting.wait_for_wake(0.3) }
    assert_nil Sync { waiting.wait_for_wake(0.3) }
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started,
      :>=,
      0.3
  ensure
    waiting&.close
  end
end

# A real server behind PgBouncer in transaction mode: it says so when it starts, and its polls find and run the jobs
# enqueued through the pooler while it is idle.
describe "a jiggler server behind PgBouncer (transaction mode)" do
  before { @servers = [] }

  after do
    @servers.each(&:kill)
    @client_store&.close
    PostgresServer.instance.drop_schema(@namespace)
  end

  it "runs each job enqueued while it is idle, once" do
    env = {
      "REDIS_URL" => nil,
      "JIGGLER_DATABASE_URL" => PgBouncerServer.instance.url
    }
    server = ServerProcess.new(
      "-r", "./test/fixtures/metrics_jobs.rb",
      "-c", "5",
      namespace: @namespace,
      env: env
    ).start
    @servers << server
    wait_for(timeout: 20, message: "server start") do
      server.log.include?("started:") || !server.running?
    end
    assert_match(/behind a pooler that refuses startup options/, server.log)
    @client_store = Jiggler::Store::Postgres.new(
      url: PgBouncerServer.instance.url,
      namespace: @namespace
    )
    Jiggler.client = Jiggler::Client.new(@client_store)
    MetricsJobs::Fast.enqueue_bulk((1..100).zip)
    wait_for(timeout: 30, message: "100 jobs run") do
      server.log.scan(/^slept MetricsJobs::Fast/).size >= 100
    end
    wait_for(message: "every job acknowledged") do
      Jiggler.summary["processed_count"] == 100
    end
    assert_equal 100, server.log.scan(/^slept MetricsJobs::Fast/).size,
      "each job ran once"
  end
end

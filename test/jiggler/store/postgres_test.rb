# frozen_string_literal: true

require "test_helper"
require "async"
require "support/store_contract"
require "support/postgres_server"

describe Jiggler::Store::Postgres do
  include StoreContract

  def build_store
    url = PostgresServer.instance.url
    Jiggler::Store::Postgres.new(url: url, namespace: @namespace, pool_size: 4)
  end

  def teardown
    super
    PostgresServer.instance.drop_schema(@namespace)
  end
end

# A fiber stopped while its statement runs (a shutdown's Async::Stop) leaves its connection busy.
describe "Jiggler::Store::Postgres after a fiber stopped in a statement" do
  def teardown
    @store&.close
    PostgresServer.instance.drop_schema(@namespace)
    super
  end

  it "lends its connection again, opened anew, to the next caller" do
    @store = Jiggler::Store::Postgres.new(
      url: PostgresServer.instance.url,
      namespace: @namespace
    )
    Sync do |task|
      sleeper = task.async do
        @store.with { |connection| connection.exec("SELECT pg_sleep(5)") }
      end
      task.sleep(0.2)
      sleeper.stop
      @store.push("default", ["{}"])
      assert_equal({"default" => 1}, @store.queue_sizes)
    end
  end
end

# Transactional enqueue: a job written through an application's connection exists if and only if its
# transaction commits.
describe "Jiggler::Store::Postgres on an application's connection" do
  def setup
    super
    @app = PG.connect(PostgresServer.instance.url)
    @app.exec(
      "SET client_min_messages = warning; " \
      "CREATE TABLE IF NOT EXISTS orders (id bigint)"
    )
    @client = Jiggler::Client.new(
      Jiggler::Store::Postgres.on(@app, namespace: @namespace)
    )
    @store = Jiggler::Store::Postgres.new(
      url: PostgresServer.instance.url,
      namespace: @namespace
    )
    @store.ping
  end

  def teardown
    @store.close
    @app.exec(
      "SET client_min_messages = warning; " \
      "DROP SCHEMA IF EXISTS \"#{@namespace}\" CASCADE"
    )
    @app.close
    super
  end

  it "enqueues with the transaction that commits" do
    jid = nil
    @app.transaction do
      @app.exec("INSERT INTO orders VALUES (1)")
      jid = RecordJob.through(@client).enqueue(1)
      assert_equal({}, @store.queue_sizes, "not seen before the commit")
    end
    jids = @store.queue_entries("default").map do |payload|
      Jiggler::Payload.load(payload)["jid"]
    end
    assert_equal [jid], jids
  end

  it "leaves nothing when the transaction rolls back" do
    assert_raises(ZeroDivisionError) do
      @app.transaction do
        RecordJob.through(@client).enqueue(1)
        RecordJob.through(@client).enqueue_in(60, 2)
        1 / 0
      end
    end
    assert_equal({}, @store.queue_sizes)
    assert_equal 0, @store.counts[:scheduled]
  end

  it "wakes idle servers only once the transaction commits" do
    @store.wait_for_wake(0.05) # starts listening
    @app.transaction do
      RecordJob.through(@client).enqueue(1)
      assert_nil @store.wait_for_wake(0.2), "no announcement before the commit"
    end
    assert_equal :queues, @store.wait_for_wake(5)
  end

  # A push whose transaction commits after a younger job was claimed sits behind the claim's mark, which only a
  # rescan passes; the announcement of the commit comes just after the claim, sooner than a rescan may run.
  it "wakes a server again for a late commit once a rescan may find it" do
    @store.wait_for_wake(0.05) # starts listening
    late = nil
    @app.transaction do
      late = RecordJob.through(@client).enqueue(1)
      @store.push("default", ["younger"])
      assert_equal :queues, @store.wait_for_wake(5)
      assert_equal ["younger"],
        @store.fetch("p1", ["default"], limit: 10).map(&:payload)
    end
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # the fetcher's loop: fetch when woken, wait when nothing came (a rescan may wait for 0.5 s, or 20 times as long
    # as the last one took: within 3 s, well before a server's 5 s poll)
    assert_equal :queues, @store.wait_for_wake(5)
    taken = []
    while taken.empty?
      taken = @store.fetch("p1", ["default"], limit: 10)
      break unless taken.empty? && @store.wait_for_wake(3)
    end
    waited = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal [late],
      taken.map { |job| Jiggler::Payload.load(job.payload)["jid"] }
    assert_operator waited, :<, 3
    assert_nil @store.wait_for_wake(1), "woken again once only"
  end

  it "writes outside a transaction at once" do
    RecordJob.through(@client).enqueue(1)
    assert_equal({"default" => 1}, @store.queue_sizes)
  end
end

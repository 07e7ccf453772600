# frozen_string_literal: true

require_relative "../../reliability/helper"
require "support/redis_sentinel_group"
require "rack/mock"
require "jiggler/web"

describe Jiggler::Store::Redis::SentinelURL do
  def sentinel_url(url) = Jiggler::Store::Redis::SentinelURL.new(url)

  it "names the sentinels, the master, its credentials and database" do
    config = sentinel_url(
      "redis+sentinel://user:s%40cret@10.0.0.1:26380,[::1],host-c:5000/primary/2"
    ).config
    assert_equal "primary", config.name
    assert_equal [["10.0.0.1", 26380], ["::1", 26379], ["host-c", 5000]],
      config.sentinels.map { |sentinel| [sentinel.host, sentinel.port] }
    assert_equal ["user", "s@cret", 2],
      [config.username, config.password, config.db]
    assert_equal(
      "redis+sentinel://10.0.0.1:26380,[::1]:26379,host-c:5000/primary",
      config.server_url
    )
  end

  it "takes the sentinels' own password from sentinel_password" do
    config = sentinel_url(
      "redis+sentinel://:master@h1:1,h2:2/primary?sentinel_password=s%2Bs"
    ).config
    assert_equal ["s+s", "s+s"], config.sentinels.map(&:password)
    assert_equal "master", config.password
  end

  it "refuses a URL without a master name or with a bad port in one line, " \
    "without the password" do
    [
      "redis+sentinel://:secret@host:26379",
      "redis+sentinel://:secret@host:port/mymaster"
    ].each do |url|
      error = assert_raises(Jiggler::Config::InvalidError) { sentinel_url(url) }
      assert_match(
        /redis_url: .*redis\+sentinel:\/\/\*\*\*@host/,
        error.message
      )
      refute_includes error.message, "secret"
    end
  end

  it "is a redis_url the config accepts" do
    Jiggler.configure do |config|
      config[:redis_url] = "redis+sentinel://127.0.0.1:1/mymaster"
    end
    assert Jiggler.config.redis?
  end

  it "says which sentinels it could not reach, without the password" do
    port = Ports.free_port
    Jiggler.configure do |config|
      config[:redis_url] =
        "redis+sentinel://:secret@127.0.0.1:#{port}/mymaster"
    end
    error = assert_raises(Jiggler::Store::ConnectionError) do
      Jiggler.store.ping
    end
    assert_includes error.message,
      "redis+sentinel://127.0.0.1:#{port}/mymaster is unreachable"
    refute_includes error.message, "secret"
    refute_includes Jiggler.store.description, "secret"
  end
end

# A real failover: a master, a replica and three sentinels, the master killed with -9 while jobs stream in.
describe "Redis Sentinel failover" do
  include ReliabilityHelper

  def setup
    super
    @group = RedisSentinelGroup.new.start
    Jiggler.configure { |config| config[:redis_url] = @group.url }
  end

  def teardown
    @stream&.kill
    super
    @group&.stop
  end

  # Enqueues one job about every 10 ms in a thread, recording when each enqueue was acknowledged.
  def stream_jobs
    @acked = {}
    @enqueue_errors = 0
    @stream = Thread.new do
      1.step do |index|
        Reliability::RecordJob.enqueue("j#{index}")
        @acked["j#{index}"] = now
        sleep(0.01)
      rescue Jiggler::Store::ConnectionError
        @enqueue_errors += 1
        sleep(0.05)
      end
    end
  end

  def ran
    recorded.map { |entry| entry.delete_prefix("run:") }.to_set
  end

  def acked_since(time) = @acked.select { |_, at| at > time }.keys

  it "keeps working through a failover: servers follow the promoted " \
    "replica, acknowledged jobs Redis kept all run" do
    servers = Array.new(2) { start_reliable("-c", "5", redis_url: @group.url) }
    stream_jobs
    wait_for(message: "jobs to flow") { ran.size >= 100 }

    @group.master.kill
    # Taken once the master is dead: an enqueue acknowledged a moment before the kill landed, and run on the old
    # master, must not count as work done after the failover.
    killed_at = now
    wait_for(
      timeout: 30,
      message: "a job enqueued after the kill to run"
    ) { acked_since(killed_at).any? { |jid| ran.include?(jid) } }
    resumed = now - killed_at
    first_ack = @acked.values.select { |at| at > killed_at }.min -
      killed_at
    # more jobs on the new master
    sleep(1)
    @stream.kill
    # The sentinel asked may learn of the promotion from the others a moment after the servers found the new master.
    wait_for(
      message: "the sentinels to report the promoted replica " \
        "(master port #{@group.master_port})"
    ) do
      @group.master_port == @group.replica.port
    end

    wait_for(
      timeout: 20,
      message: "every job enqueued after the failover to run"
    ) { (acked_since(killed_at) - ran.to_a).empty? }
    wait_for(message: "the queues to drain") do
      Jiggler.summary["queues"].empty?
    end
    lost = @acked.keys - ran.to_a
    puts format(
      "\nsentinel failover (kill -9 of the master): " \
      "enqueues acknowledged again after %.2f s, " \
      "jobs running again after %.2f s; " \
      "%d enqueues refused meanwhile; " \
      "%d of %d acknowledged jobs lost " \
      "(acknowledged by the old master in its last %.0f ms, " \
      "not yet replicated)",
      first_ack,
      resumed,
      @enqueue_errors,
      lost.size,
      @acked.size,
      lost.empty? ? 0 : (killed_at - lost.map { |jid| @acked[jid] }.min) * 1000
    )
    lost.each do |jid|
      assert_operator @acked[jid], :>, killed_at - 1,
        "#{jid}: only the last moment before the kill may be lost"
    end
    assert_empty %i[retry dead].flat_map { |set| set_jobs(set) }
    servers.each do |server|
      assert server.running?,
        "servers follow the failover without a restart:\n#{server.log}"
    end
    servers.each do |server|
      wait_for(message: "server #{server.pid} to log its recovery") do
        server.log.include?("working again after")
      end
    end
    assert_equal 200,
      Rack::MockRequest.new(Jiggler::Web.new).get("/").status,
      "the dashboard reads through the sentinels"
  end
end

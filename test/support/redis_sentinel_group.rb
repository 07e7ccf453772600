# frozen_string_literal: true

require_relative "redis_server"
require_relative "waiting"

# A Redis master, its replica and three sentinels watching them, each a process of its own on a free loopback port.
# The sentinels declare the master down after 1 s without an answer, so a failover takes a few seconds.
class RedisSentinelGroup
  include Waiting

  NAME = "mymaster"

  attr_reader :master, :replica

  def start
    @master = RedisServer.new.start
    @replica = RedisServer.new(
      args: ["--replicaof", "127.0.0.1", @master.port.to_s]
    ).start
    @sentinels = Array.new(3) do
      RedisServer.new(config_file: sentinel_config, args: ["--sentinel"]).start
    end
    wait_until_watched
    self
  rescue
    stop
    raise
  end

  # The URL jiggler connects through: the sentinels and the master's name.
  def url
    "redis+sentinel://#{
      @sentinels.map { |sentinel| "127.0.0.1:#{sentinel.port}" }.join(",")
    }/#{NAME}"
  end

  # The port the sentinels name as the master now.
  def master_port
    Integer(
      @sentinels.first.client
        .call("SENTINEL", "get-master-addr-by-name", NAME).last
    )
  end

  def stop
    [*@sentinels, @replica, @master].compact.each(&:stop)
    FileUtils.rm_rf(@config_dirs) if @config_dirs
  end

  private

  # A sentinel is redis-server started with --sentinel and a config file it may rewrite.
  def sentinel_config
    dir = Dir.mktmpdir("jiggler-sentinel")
    (@config_dirs ||= []) << dir
    config = File.join(dir, "sentinel.conf")
    File.write(config, <<~CONF)
      sentinel monitor #{NAME} 127.0.0.1 #{@master.port} 2
      sentinel down-after-milliseconds #{NAME} 1000
      sentinel failover-timeout #{NAME} 5000
    CONF
    config
  end

  # Until each sentinel knows the replica and the two other sentinels, a failover could not happen.
  def wait_until_watched
    wait_for(
      timeout: 20, message: "the sentinels to find the replica and each other"
    ) do
      @sentinels.all? do |sentinel|
        info = sentinel.client.call("SENTINEL", "master", NAME)
        info = info.each_slice(2).to_h if info.is_a?(Array)
        info["num-slaves"].to_i == 1 && info["num-other-sentinels"].to_i == 2
      end
    end
    wait_for(timeout: 10, message: "the replica to be in sync") do
      @replica.client.call("INFO", "replication")
        .include?("master_link_status:up")
    end
  end

  def flunk(message) = raise(message)
end

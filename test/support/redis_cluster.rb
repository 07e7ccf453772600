# frozen_string_literal: true

require "open3"
require_relative "redis_server"
require_relative "waiting"

# A Redis Cluster of three masters (no replicas), each a redis-server process on a free loopback port, made into a
# cluster with `redis-cli --cluster create`.
class RedisCluster
  include Waiting

  attr_reader :nodes

  def start
    @nodes = Array.new(3) do
      RedisServer.new(
        args: %w[
          --cluster-enabled yes --cluster-config-file nodes.conf
          --cluster-node-timeout 5000
        ]
      ).start
    end
    create
    self
  rescue
    stop
    raise
  end

  # The URL of the node that holds a namespace's keys: they share the hash tag {namespace}, so one slot.
  def owner_url(namespace) = "redis://127.0.0.1:#{owner(namespace).port}/0"

  # The URL of a node that does not hold the namespace's keys.
  def other_url(namespace)
    "redis://127.0.0.1:#{(@nodes - [owner(namespace)]).first.port}/0"
  end

  # The cluster's slot for a namespace.
  def slot(namespace)
    @nodes.first.client.call("CLUSTER", "KEYSLOT", "{#{namespace}}:queues")
  end

  def stop
    @nodes&.each(&:stop)
  end

  private

  def owner(namespace)
    slot = slot(namespace)
    port = @nodes.first.client.call("CLUSTER", "SLOTS")
      .find { |first, last, *| (first..last).cover?(slot) }[2][1]
    @nodes.find { |node| node.port == port }
  end

  def create
    addresses = @nodes.map { |node| "127.0.0.1:#{node.port}" }
    output, status = Open3.capture2e(
      "redis-cli", "--cluster", "create", *addresses,
      "--cluster-replicas", "0", "--cluster-yes"
    )
    raise "redis-cli --cluster create failed:\n#{output}" unless status.success?
    wait_for(timeout: 20, message: "the cluster to be ready") do
      @nodes.all? do |node|
        node.client.call("CLUSTER", "INFO").include?("cluster_state:ok")
      end
    end
  end

  def flunk(message) = raise(message)
end

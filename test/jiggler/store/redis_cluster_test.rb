# frozen_string_literal: true

require_relative "../reliability/helper"
require "support/redis_cluster"
require "support/store_contract"
require "rack/mock"
require "jiggler/web"

# A real Redis Cluster of three masters, started once for this file.
module ClusterUnderTest
  def self.instance
    @instance ||= RedisCluster.new.start.tap do |cluster|
      Minitest.after_run { cluster.stop }
    end
  end
end

# Every store operation, and so every Lua script, on the cluster node that holds the namespace's slot.
describe "Jiggler::Store::Redis on Redis Cluster" do
  include StoreContract

  def build_store
    Jiggler.configure do |config|
      config[:redis_url] = ClusterUnderTest.instance.owner_url(@namespace)
    end
    Jiggler::Store.client(Jiggler.config)
  end
end

describe "jiggler on Redis Cluster" do
  include ReliabilityHelper

  def cluster = ClusterUnderTest.instance

  def setup
    super
    Jiggler.configure do |config|
      config[:redis_url] = cluster.owner_url(@namespace)
    end
  end

  it "runs jobs end to end with a real server, and the dashboard's " \
    "pages answer" do
    server = start_reliable(
      "-c", "5",
      redis_url: cluster.owner_url(@namespace)
    )
    Reliability::RecordJob.enqueue_bulk(
      (1..200).map { |index| ["c#{index}"] }
    )
    Reliability::RecordJob.enqueue_in(0.5, "later")
    wait_for(message: "every job to run") do
      recorded.count { |entry| entry.start_with?("run:") } == 201
    end
    assert_equal(
      ((1..200).map { |index| "run:c#{index}" } + ["run:later"]).sort,
      recorded.sort
    )

    web = Rack::MockRequest.new(Jiggler::Web.new)
    [
      "/",
      "/stats",
      "/busy",
      "/queues",
      "/queues/default",
      "/scheduled",
      "/retries",
      "/dead"
    ].each do |path|
      response = web.get(path)
      assert_equal 200, response.status, "#{path}: #{response.body[0, 300]}"
    end
    assert_includes web.get("/busy").body, server_id(server).split(":")[2],
      "the dashboard shows the live process"
  end

  it "refuses a node that does not hold the namespace, in one line " \
    "naming the one that does" do
    Jiggler.configure do |config|
      config[:redis_url] = cluster.other_url(@namespace)
    end
    error = assert_raises(Jiggler::Store::ConnectionError) do
      Jiggler.store.ping
    end
    owner = cluster.owner_url(@namespace)[%r{//([^/]+)}, 1]
    assert_includes error.message,
      "namespace #{@namespace.inspect} lives on Redis Cluster node #{owner}"
    assert_includes error.message, "point redis_url at that node"
  end

  # Each namespace's keys share its hash tag's slot, so they all live on one node, whichever it is, and namespaces
  # on different shards each work. Checked on the nodes' own keys, with the slots the cluster computes for them.
  it "keeps every key a namespace's jobs write in that namespace's slot, " \
    "on its node, for namespaces on different shards" do
    namespaces = %w[app-a app-b app-c app-d app-e app-f].map do |name|
      "#{name}-#{@namespace}"
    end
    owners = namespaces.to_h do |namespace|
      [namespace, cluster.owner_url(namespace)]
    end
    assert_operator owners.values.uniq.size, :>, 1,
      "six namespaces all landed on one of three shards"
    namespaces.each do |namespace|
      Jiggler.configure do |config|
        config[:redis_url] = owners.fetch(namespace)
        config[:namespace] = namespace
      end
      Reliability::RecordJob.enqueue("now")
      Reliability::RecordJob.enqueue_in(60, "later")
      Jiggler.store.fetch(
        "cluster-test:process",
        ["default"],
        limit: 1,
        reliable: true
      )
      held = cluster.nodes.to_h do |node|
        [node.port, node.client.call("KEYS", "*#{namespace}*")]
      end
      owner = Integer(owners.fetch(namespace)[/:(\d+)\//, 1])
      refute_empty held.fetch(owner),
        "#{namespace}: no key on the node of its slot"
      assert_equal [[]], held.except(owner).values.uniq,
        "#{namespace}: keys on another node"
      slots = held.fetch(owner).map do |key|
        cluster.nodes.first.client.call("CLUSTER", "KEYSLOT", key)
      end
      assert_equal [cluster.slot(namespace)], slots.uniq,
        "#{namespace}: keys outside its slot: #{held.fetch(owner)}"
    end
  end
end

# frozen_string_literal: true

require_relative "helper"

# A Redis database shared with an application: 100k keys of its own, some named like jiggler's. Jiggler, with its
# default namespace, touches none of them (not while it works, not when it prunes everything), and walks no keyspace:
# what it costs does not grow with the application's data.
module TenantsTest
  TENANT_KEYS = 100_000

  # Keys an application might have that look like jiggler's, with what each holds. The lists hold jobs that would
  # run (and be recorded) if jiggler read them.
  LOOKALIKES = {
    "in_progress" => [:list, "intruder-1"],
    "queue:default" => [:list, "intruder-2"],
    "jiggler:queue:default" => [:list, "intruder-3"],
    "{jiggler}x" => [:string, "x"],
    "{jiggler}:queue:defaults" => [:list, "intruder-4"],
    "{jiggler}:queue:default:old" => [:list, "intruder-5"],
    "{Jiggler}:queue:default" => [:list, "intruder-6"],
    "{jiggler}:in_flight" => [:hash, "0|default"],
    "{jiggler}:in_flight:" => [:hash, "1|default"],
    "{jiggler}:processes:old" => [:zset, "a-process"],
    "{jiggler}:stats:processed:today" => [:string, "41"],
    "{jiggler}:queues:archive" => [:set, "default"],
    "jiggler:processes" => [:zset, "jiggler:svr:1"],
    "jiggler:retry" => [:zset, "retry-me"],
    "jiggler:dead" => [:zset, "dead-me"],
    "jiggler" => [:string, "the app's own jiggler setting"]
  }.freeze
end

describe "other tenants of the Redis database" do
  include ReliabilityHelper

  before do
    @own = start_own_redis(appendonly: false)
    # loading 100k keys takes a second or so
    @admin = RedisClient.new(url: @own.url, read_timeout: 10)
    # The default namespace, where the lookalikes are closest to jiggler's own keys.
    @namespace = "jiggler"
    Jiggler.configure { |config| config[:namespace] = @namespace }
    redis.call("DEL", "#{@namespace}:recorded")
  end

  after do
    redis.call("DEL", "#{@namespace}:recorded")
    @admin.close
  end

  def job_payload(value)
    JSON.generate({
      "jid" => SecureRandom.hex(12),
      "name" => "Reliability::RecordJob",
      "args" => [value],
      "queue" => "default"
    })
  end

  # 100k keys of several types, written by one Lua script (a second or so), then the lookalikes.
  def load_tenant_data
    @admin.call("EVAL", <<~LUA, 0, TenantsTest::TENANT_KEYS)
      for i = 1, tonumber(ARGV[1]) do
        local kind = i % 4
        if kind == 0 then redis.call("SET", "app:user:" .. i, i)
        elseif kind == 1 then redis.call("HSET", "app:session:" .. i, "user", i)
        elseif kind == 2 then redis.call("RPUSH", "app:events:" .. i, i)
        else redis.call("ZADD", "app:scores:" .. i, i, "member") end
      end
    LUA
    TenantsTest::LOOKALIKES.each do |key, (type, value)|
      case type
      when :list then @admin.call("RPUSH", key, job_payload(value))
      when :string then @admin.call("SET", key, value)
      when :hash
        @admin.call("HSET", key, value, job_payload("intruder-hash"))
      when :zset
        @admin.call(
          "ZADD", key, Time.now.to_f - 60,
          value.start_with?("retry", "dead") ? job_payload(value) : value
        )
      when :set then @admin.call("SADD", key, value)
      end
    end
    @admin.call("EXPIRE", "{jiggler}x", 3600)
  end

  # Every lookalike's serialized value and TTL.
  def lookalike_snapshot
    TenantsTest::LOOKALIKES.keys.to_h do |key|
      [key, [@admin.call("DUMP", key), @admin.call("PTTL", key) > 0]]
    end
  end

  # What the client side does for an application: enqueue in all forms, read the summary, clean up.
  # @returns [Hash(String, Integer)] calls per command.
  def client_workload
    @admin.call("CONFIG", "RESETSTAT")
    Reliability::RecordJob.enqueue("w-1")
    Reliability::RecordJob.enqueue_bulk([["w-2"], ["w-3"]])
    Reliability::RecordJob.enqueue_in(60, "w-4")
    Jiggler.summary
    Jiggler.config.cleaner.prune_queue("default")
    Jiggler.config.cleaner.prune_all
    command_calls(@admin).except("info", "config")
  end

  it "issues the same bounded commands for enqueue, summary and cleaner " \
    "with 100k unrelated keys" do
    # once first, so that connections are open and scripts loaded before counting
    client_workload
    empty = client_workload
    load_tenant_data
    started = now
    crowded = client_workload
    took = now - started
    puts format(
      "\nclient workload (enqueue x3, summary, prune_queue, prune_all): " \
        "%d commands, %.3f s with %d tenant keys",
      crowded.values.sum, took, TenantsTest::TENANT_KEYS
    )
    assert_equal empty, crowded,
      "the same commands, whatever else the database holds"
    # A budget, not a count: each store role the summary reads or prune_all clears adds a command or two (metrics,
    # process signals, limits and recurring tasks came to 41; prune_all reading the indexes of locks and limit keys to
    # clear them, to 47; clears that release the unique locks of the jobs they remove, one script per queue and set,
    # and cancel requests, to 56); what must hold is the line above and the one below.
    assert_operator crowded.values.sum, :<=, 60
    refute_keyspace_walk(@admin)
  end

  it "leaves the application's keys untouched while working " \
    "and after prune_all, and never walks the keyspace" do
    load_tenant_data
    before = lookalike_snapshot
    tenant_size = @admin.call("DBSIZE")
    @admin.call("CONFIG", "RESETSTAT")

    values = (1..200).map { |n| "job-#{n}" }
    Reliability::RecordJob.enqueue_bulk(values.zip)
    Reliability::RecordJob.enqueue_in(0.5, "scheduled")
    Reliability::MixedJob.with_options(retries: 1)
      .enqueue_bulk([[true, 0], [true, 0]])
    server = start_reliable("-c", "5", redis_url: @own.url)
    wait_for(message: "every job to run") do
      values.all? { |value| recorded_count("run:#{value}") == 1 }
    end
    wait_for(timeout: 5, message: "the scheduled job") do
      recorded_count("run:scheduled") == 1
    end
    wait_for(message: "the failing jobs in the retry set") do
      Jiggler.summary["retry_jobs_count"] == 2
    end
    summary = Jiggler.summary
    assert_equal(
      {}, summary["queues"], "the application's lists are not jiggler queues"
    )
    assert_equal [server_id(server)], summary["processes"].keys
    assert_empty recorded.grep(/intruder/),
      "no application data was run as a job"

    assert_equal before, lookalike_snapshot, "after a run"
    server.signal(:TERM)
    assert_equal 0, server.wait(timeout: 10)
    Jiggler.config.cleaner.prune_all
    assert_equal before, lookalike_snapshot, "after prune_all"
    assert_equal tenant_size, @admin.call("DBSIZE"),
      "prune_all removes jiggler's keys and only them"
    refute_keyspace_walk(@admin)
  end
end

# frozen_string_literal: true

require "test_helper"
require "delegate"
require "socket"
require "support/store_contract"

describe Jiggler::Store::Redis do
  include StoreContract

  def build_store = Jiggler::Store.client(Jiggler.config)

  def prefix = "{#{@namespace}}:"

  def all_keys = redis.call("KEYS", "*")

  describe "keys" do
    it "writes only keys that start with the namespace's hash tag" do
      before = all_keys
      fill
      subject.enqueue_due(now + 120) do |from, payload|
        Jiggler::JobRules.due(from, payload, now)
      end
      subject.requeue(StoreContract::PROCESS)
      written = all_keys - before
      refute_empty written
      assert_empty written.reject { |key| key.start_with?(prefix) }
    end

    it "leaves other apps' keys and other namespaces alone on clear_all" do
      others = [
        "in_flight",
        "queue:default",
        "jiggler:queue:default",
        "#{@namespace}:queue:default",
        "{other}:queue:default",
        "{other}:stats:processed",
        "{#{@namespace}x}:queues"
      ]
      others.each { |key| redis.call("SET", key, "keep") }
      fill
      subject.clear_all
      assert_equal ["keep"] * others.size, redis.call_v(["MGET", *others])
    end

    it "leaves no key of the namespace after clear_all" do
      fill
      subject.clear_all
      assert_empty redis.call("KEYS", "#{prefix}*")
    end

    it "leaves only the recurring tasks' settings after clear_all, " \
      "flow state included" do
      fill_flow(subject)
      subject.clear_all
      assert_equal ["#{prefix}recurring:tasks"],
        redis.call("KEYS", "#{prefix}*")
    end

    it "lets the keys of locks, slots and rate windows expire once they " \
      "no longer matter, indexed for clear_all" do
      fill_flow(subject)
      expiring = %w[
        unique:RecordJob:a
        limit:slots:RecordJob
        limit:starts:RecordJob
        limit:plan:RecordJob
      ].map { |key| "#{prefix}#{key}" }
      expiring.each do |key|
        assert_includes 1..120_000, redis.call("PTTL", key), "#{key} expires"
      end
      assert_equal ["#{prefix}unique:RecordJob:a"],
        redis.call("ZRANGE", "#{prefix}unique-index", 0, -1)
      assert_equal ["RecordJob"],
        redis.call("ZRANGE", "#{prefix}limit:index", 0, -1)
      subject.unlock("RecordJob:a", "u1")
      assert_empty redis.call("ZRANGE", "#{prefix}unique-index", 0, -1),
        "a released lock leaves the index"
    end

    it "clears the locks and limits of its own namespace alone, " \
      "whatever glob characters its name holds" do
      globbed, neighbour = [
        "#{@namespace}*[a]?",
        "#{@namespace}xa!"
      ].map do |namespace|
        Jiggler::Store.client(
          Jiggler.config.dup.tap { |config| config[:namespace] = namespace }
        )
      end
      [globbed, neighbour].each { |store| fill_flow(store) }
      globbed.clear_all
      assert_equal ["{#{@namespace}*[a]?}:recurring:tasks"],
        all_keys.select { |key| key.start_with?("{#{@namespace}*[a]?}:") }
      assert_equal "u1", neighbour.lock_holder("RecordJob:a")
      assert_includes all_keys, "{#{@namespace}xa!}:limit:slots:RecordJob"
    ensure
      [globbed, neighbour].compact.each(&:close)
    end
  end

  # A lock, a slot, a job waiting for one, a rate start and a recurring task's claim, in a store's namespace.
  def fill_flow(store)
    store.push("default", [job(jid: "j0"), job(jid: "j1"), job(jid: "j2")])
    first, second, third = store.fetch(
      StoreContract::PROCESS,
      ["default"],
      limit: 3
    )
    [[first, "j0"], [second, "j1"]].each do |fetched, jid|
      store.acquire_slot(
        StoreContract::PROCESS,
        fetched,
        key: "RecordJob",
        limit: 1,
        jid: jid,
        ttl: 60,
        reliable: true
      )
    end
    store.acquire_rate(
      StoreContract::PROCESS,
      third,
      key: "RecordJob",
      limit: 1,
      period: 60,
      jid: "j2",
      reliable: true
    )
    store.enqueue_unique("RecordJob:a", "u1", 60, queue: "other", payload: job)
    store.save_recurring({"report" => "{}"})
    store.enqueue_recurring("report", 100, "other", job)
    store.enable_recurring("report", false)
    store.fetch(
      StoreContract::PROCESS,
      ["default", "other"],
      limit: 0,
      acks: [first.handle, third.handle]
    )
  end

  describe "scripts" do
    it "loads its scripts again after SCRIPT FLUSH" do
      subject.push("default", [job])
      redis.call("SCRIPT", "FLUSH")
      fill
      redis.call("SCRIPT", "FLUSH")
      subject.schedule([[now - 1, job]])
      assert_equal 1, subject.enqueue_due(now) { |from, payload|
        Jiggler::JobRules.due(from, payload, now)
      }
      redis.call("SCRIPT", "FLUSH")
      assert_equal 1, subject.requeue(StoreContract::PROCESS)
    end

    it "pushes every chunk of a large push once, in order, when the scripts " \
      "were flushed" do
      payloads = Array.new(12_000) { |index| job(args: [index]) }
      redis.call("SCRIPT", "FLUSH")
      subject.push("default", payloads)
      assert_equal 12_000, subject.queue_sizes["default"]
      assert_equal payloads,
        redis.call("LRANGE", "#{prefix}queue:default", 0, -1).reverse
    end

    it "runs a pipelined chunk again from source when the scripts were " \
      "flushed after the first chunk" do
      flushing = Class.new(SimpleDelegator) do
        def pipelined(...)
          __getobj__.call("SCRIPT", "FLUSH")
          super
        end
      end
      keys = ["#{prefix}queue:default", "#{prefix}queues"]
      argvs = [%w[a], %w[b c], %w[d]].map do |chunk|
        ["default", "#{prefix}wake", *chunk]
      end
      replies = Jiggler::Store::Redis::Script.new("push")
        .call_each(flushing.new(redis), keys, argvs)
      assert_equal [1, 3, 4], replies
      assert_equal %w[d c b a], redis.call("LRANGE", keys.first, 0, -1)
    end
  end

  describe "single pushes" do
    def evalsha_calls
      redis.call("INFO", "commandstats")[/cmdstat_evalsha:calls=(\d+)/, 1].to_i
    end

    it "writes one job into a queue holding a backlog with a bare LPUSH" do
      12.times { subject.push("default", [job]) }
      before = evalsha_calls
      5.times { subject.push("default", [job]) }
      assert_equal [before, {"default" => 17}],
        [evalsha_calls, subject.queue_sizes]
    end

    it "registers the queue and wakes idle servers when the queue it took " \
      "for a backlog was emptied meanwhile" do
      12.times { subject.push("default", [job]) }
      subject.clear_queue("default")
      listener = Jiggler::Store.dedicated(Jiggler.config)
      # subscribed, nothing announced yet
      assert_nil listener.wait_for_wake(0.01)
      subject.push("default", [job(args: ["after"])])
      assert_equal :queues, listener.wait_for_wake(1)
      assert_equal({"default" => 1}, subject.queue_sizes)
    ensure
      listener&.close
    end
  end

  describe "cancel_waiting" do
    # The commands the store sends from now on (those of its scripts are not seen: they run in Redis).
    def sent_commands
      commands = []
      recorder = Class.new(SimpleDelegator) do
        define_method(:call) do |*command, **options|
          (commands << command.first.to_s.upcase) && super(*command, **options)
        end
        define_method(:call_v) do |command|
          (commands << command.first.to_s.upcase) && super(command)
        end
      end
      subject.define_singleton_method(:with) do |&block|
        super() { |redis| block.call(recorder.new(redis)) }
      end
      commands
    end

    def cancel(jid)
      subject.cancel_waiting(
        jid,
        now: now,
        dead_cutoff: 0.0,
        dead_max: 100
      ) { |payload| payload }
    end

    # Runs a block once, after the store looked for the job and before its script runs.
    def between_look_and_move(&block)
      subject.define_singleton_method(:find_waiting) do |jid|
        found = super(jid)
        block&.call
        block = nil
        found
      end
    end

    it "moves the job with one script call, and only reads while it looks " \
      "(no keyspace walk)" do
      subject.push("default", [
        job(jid: "0" * 24),
        job,
        job(jid: "a" * 24),
        job
      ])
      # the script is loaded
      assert cancel("0" * 24)
      commands = sent_commands
      assert cancel("a" * 24)
      assert_includes commands, "LRANGE", "it looked in the queue"
      assert_equal ["EVALSHA"], commands - %w[ZSCAN SMEMBERS HKEYS LRANGE],
        "commands sent: #{commands.inspect}"
    end

    it "leaves a job a fetch took between the look and the move to " \
      "the cancel request" do
      subject.push("default", [job(jid: "b" * 24)])
      between_look_and_move { fetch(limit: 1) }
      refute cancel("b" * 24)
      assert_equal [1, 0],
        [subject.in_flight_count(StoreContract::PROCESS), subject.counts[:dead]]
    end

    it "looks again for a job that moved on between the look and the move, " \
      "and cancels it there" do
      subject.schedule([[now - 1, job(jid: "c" * 24)]])
      between_look_and_move { enqueue_due(now) }
      assert cancel("c" * 24)
      assert_equal [{}, 0, 1],
        [
          subject.queue_sizes,
          subject.counts[:scheduled],
          subject.counts[:dead]
        ]
    end
  end

  describe "fetch_when_pushed" do
    def waiter = @waiter ||= Jiggler::Store.dedicated(Jiggler.config)

    after { @waiter&.close }

    it "takes the jobs pushed during the wait, recorded in flight, " \
      "in the reply to the wait" do
      waiting = Thread.new do
        waiter.fetch_when_pushed(
          StoreContract::PROCESS,
          "default",
          limit: 5,
          timeout: 5
        )
      end
      wait_for(message: "the wait in Redis") do
        redis.call("CLIENT", "LIST").include?(" cmd=blmove ")
      end
      subject.push("default", [job(args: [1]), job(args: [2])])
      taken = waiting.value
      assert_equal [[1], [2]],
        taken.map { |fetched| Jiggler::Payload.load(fetched.payload)["args"] }
      assert_equal taken.map(&:handle).sort,
        subject.in_flight(StoreContract::PROCESS).map(&:handle).sort
      assert_equal({}, subject.queue_sizes)
    end

    it "returns at once when the queue holds jobs, and nil when none came " \
      "in time" do
      subject.push("default", [job])
      assert_equal 1,
        waiter.fetch_when_pushed(
          StoreContract::PROCESS,
          "default",
          limit: 5,
          timeout: 5
        ).size
      started = now
      assert_nil waiter.fetch_when_pushed(
        StoreContract::PROCESS,
        "default",
        limit: 5,
        timeout: 0.2
      )
      assert_operator now - started, :<, 2
    end

    it "takes nothing from a paused queue, which still ends the wait" do
      subject.push("default", [job])
      subject.pause_queue("default")
      assert_equal [],
        waiter.fetch_when_pushed(
          StoreContract::PROCESS,
          "default",
          limit: 5,
          timeout: 5
        )
      assert_equal({"default" => 1}, subject.queue_sizes)
    end
  end

  describe "concurrent schedulers" do
    it "move each due job once" do
      subject.schedule(Array.new(500) { [now - 1, job] })
      stores = Array.new(4) { build_store }
      moved = stores.map do |other|
        Thread.new do
          other.enqueue_due(now) do |from, payload|
            Jiggler::JobRules.due(from, payload, now)
          end
        end
      end.sum(&:value)
      assert_equal [500, {"default" => 500}], [moved, subject.queue_sizes]
    end
  end

  describe "when Redis is unreachable" do
    def unreachable_config
      url = "redis://127.0.0.1:#{free_port}/0"
      Jiggler.configure { |config| config[:redis_url] = url }
    end

    def build_store = Jiggler::Store.client(unreachable_config)

    it "raises ConnectionError naming the server" do
      error = assert_raises(Jiggler::Store::Redis::ConnectionError) do
        subject.push("default", [job])
      end
      assert_match(/unreachable/, error.message)
      assert_includes error.message, "127.0.0.1"
    end

    it "raises ConnectionError from reads, pings and waits too" do
      assert_raises(Jiggler::Store::Redis::ConnectionError) { subject.ping }
      assert_raises(Jiggler::Store::Redis::ConnectionError) { subject.counts }
      assert_raises(Jiggler::Store::Redis::ConnectionError) do
        subject.wait_for_wake(0.1)
      end
    end

    it "raises ConnectionError from a dedicated connection" do
      store = Jiggler::Store.dedicated(unreachable_config)
      assert_raises(Jiggler::Store::Redis::ConnectionError) do
        store.fetch("p", ["default"], limit: 1)
      end
    end
  end
end

# frozen_string_literal: true

require_relative "redis/connection"
require_relative "redis/script"
require_relative "redis/keys"
require_relative "redis/admin"
require_relative "redis/batches"
require_relative "redis/signals"
require_relative "redis/metrics"
require_relative "../payload"
require_relative "../error"
require_relative "connection_error"

module Jiggler
  module Store
    # The Redis store: queues are lists, scheduled, retry and dead jobs are sorted sets scored by time, and each
    # process records the jobs it holds in its own in-flight hash. Every move between places is one Lua script.
    #
    # All keys of a namespace share one hash tag (`{jiggler}:...`), so the scripts also work on Redis Cluster.
    class Redis
      # Raised when the store cannot be reached.
      class ConnectionError < Store::ConnectionError; end

      include Admin
      include Batches
      include Signals
      include Metrics

      CHUNK = 1000
      PUSH_CHUNK = 5000 # under Lua's limit of about 8000 values for unpack
      DUE_CHUNK = 100
      SCRIPTS = %w[push schedule fetch fail move kill batch join].to_h { |name| [name.to_sym, Script.new(name)] }.freeze
      private_constant :CHUNK, :PUSH_CHUNK, :DUE_CHUNK, :SCRIPTS

      attr_reader :keys

      # @parameter pool [#with | #acquire] a ConnectionPool, an Async::Pool or a single RedisClient.
      # @parameter namespace [String] the prefix of every key.
      # @parameter config [RedisClient::Config | Nil] used to open the subscription that wakes idle servers.
      # @parameter owned [Boolean] whether `close` also closes the pool (false for a pool the application passed).
      def initialize(pool:, namespace: "jiggler", config: nil, owned: false)
        @pool = pool
        @owned = owned
        @checkout = pool.respond_to?(:acquire) ? :acquire : :with
        @keys = Keys.new(namespace)
        @config = config
      end

      # A human name for logs.
      def description
        "Redis #{@config&.server_url || "(custom pool)"} namespace #{@keys.namespace.inspect}"
      end

      # Raises ConnectionError unless the store answers for this namespace's keys (on Redis Cluster, only the node
      # holding their slot does).
      def ping
        with { |redis| redis.call("EXISTS", @keys.queues) }
      end

      # Appends jobs to a queue; idle servers are woken.
      # @parameter queue [String]
      # @parameter payloads [Array(String)]
      def push(queue, payloads)
        argvs = payloads.each_slice(PUSH_CHUNK).map { |chunk| [queue, @keys.wake, *chunk] }
        with { |redis| SCRIPTS[:push].call_each(redis, [@keys.queue(queue), @keys.queues], argvs) }
      end

      # Adds jobs to the scheduled set, announcing them to idle schedulers when one is due sooner than the others.
      # @parameter entries [Array([Float, String])] pairs of run-at time (epoch seconds) and payload.
      def schedule(entries)
        with do |redis|
          entries.each_slice(CHUNK) do |chunk|
            SCRIPTS[:schedule].call(redis, [@keys.scheduled], [@keys.schedule_wake, chunk.map(&:first).min, *chunk.flatten(1)])
          end
        end
      end

      # Acknowledges finished jobs and takes up to `limit` new ones, highest priority queue first; paused queues are
      # skipped.
      # @parameter process [String] the fetching process's id.
      # @parameter queues [Array(String)] queue names in priority order.
      # @parameter limit [Integer] at most this many jobs (0 only acknowledges).
      # @parameter token [Integer] the first unused in-flight token of this process.
      # @parameter acks [Array(String)] in-flight fields of jobs that finished.
      # @parameter reliable [Boolean] record fetched jobs in flight (at-least-once).
      # @returns [Array(String)] in-flight field and payload, alternating.
      def fetch(process, queues, limit:, token:, acks: [], reliable: true)
        keys = [@keys.in_flight(process), @keys.processed, @keys.paused, *queues.map { |name| @keys.queue(name) }]
        argv = [limit, token, reliable ? 1 : 0, acks.size, *acks, *queues]
        with { |redis| SCRIPTS[:fetch].call(redis, keys, argv) }
      end

      # Moves failed jobs out of flight into the retry or the dead set, and counts the failures.
      # @returns [Integer] how many moved (a job no longer in flight is skipped).
      # @parameter failures [Array([String, String, Float, String])] in-flight field, "retry" or "dead", score, payload.
      # @parameter dead_cutoff [Float] dead jobs older than this epoch time are dropped.
      # @parameter dead_max [Integer] the dead set keeps at most this many jobs.
      def fail(process, failures, reliable:, dead_cutoff:, dead_max:)
        keys = [@keys.in_flight(process), @keys.retry, @keys.dead, @keys.failures]
        with { |redis| SCRIPTS[:fail].call(redis, keys, [reliable ? 1 : 0, dead_cutoff, dead_max, *failures.flatten(1)]) }
      end

      # Puts jobs a process holds in flight back at the head of their queues, each exactly once.
      # @parameter jobs [Hash(String, String) | Nil] in-flight fields to the payload to push instead of the recorded
      #   one (nil: as recorded); nil means every job the process holds.
      # @returns [Integer] how many jobs went back.
      def requeue(process, jobs = nil)
        key = @keys.in_flight(process)
        with do |redis|
          jobs ||= redis.call("HKEYS", key).to_h { |field| [field, nil] }
          # Newest first: each goes to the head of its queue, so the first fetched ends up first again.
          jobs.sort_by { |field, _| -field.to_i }.each_slice(CHUNK).sum do |slice|
            move(redis, key, "in_flight", slice.map { |field, payload| [field, field.split("|", 2).last, payload.to_s] })
          end
        end
      end

      # The jobs a process holds in flight.
      # @returns [Hash(String, String)] in-flight field to payload.
      def in_flight(process)
        with { |redis| redis.call("HGETALL", @keys.in_flight(process)) }
      end

      # How many jobs a process holds in flight.
      def in_flight_count(process)
        with { |redis| redis.call("HLEN", @keys.in_flight(process)) }
      end

      # The registered processes whose registration expired: they stopped beating, so they are dead.
      # @returns [Array(String)] their ids.
      def dead_processes = registrations.filter_map { |id, info| id if info.nil? }

      # Drops a dead process from the registry once it holds no job in flight.
      # @returns [Boolean] whether it was dropped.
      def forget(process)
        return false unless in_flight_count(process).zero?
        with { |redis| redis.call("ZREM", @keys.processes, process) == 1 }
      end

      # When the earliest scheduled job or retry is due. @returns [Float | Nil] epoch seconds; nil when there is none.
      def next_due
        firsts = with do |redis|
          redis.pipelined { |pipeline| [@keys.scheduled, @keys.retry].each { |set| pipeline.call("ZRANGE", set, 0, 0, "WITHSCORES") } }
        end
        firsts.filter_map { |first| first.first&.last&.to_f }.min
      end

      # Moves due scheduled jobs and retries to their queues. Both sets are read in one round trip, so an idle check
      # costs one.
      # @parameter now [Float] epoch seconds.
      # @returns [Integer] how many jobs moved.
      def enqueue_due(now)
        sets = [[@keys.scheduled, "queue"], [@keys.retry, "retry_queue"]]
        firsts = with { |redis| redis.pipelined { |pipeline| sets.each { |set, _| pipeline.call_v(due_range(set, now)) } } }
        sets.zip(firsts).sum do |(set, queue_field), members|
          members.empty? ? 0 : enqueue_due_from(set, queue_field, now, members)
        end
      end

      # Registers a live process, or refreshes its registration.
      # @parameter process [String] its id.
      # @parameter info [String] JSON shown by the summary.
      # @parameter ttl [Numeric] seconds until the registration expires without another heartbeat.
      def beat(process, info, ttl)
        with do |redis|
          redis.pipelined do |pipeline|
            pipeline.call("ZADD", @keys.processes, Time.now.to_f, process)
            pipeline.call("SET", @keys.process(process), info, "PX", (ttl * 1000).to_i)
          end
        end
      end

      # Removes a process's registration; its in-flight hash, if any jobs are left there, stays for recovery.
      def unregister(process)
        with do |redis|
          redis.pipelined do |pipeline|
            pipeline.call("ZREM", @keys.processes, process)
            pipeline.call("DEL", @keys.process(process))
          end
        end
      end

      # Waits for an announcement: a job pushed to an empty queue, or a job scheduled sooner than the others.
      # @returns [Symbol | Nil] :queues, :schedule, :any (announcements may have been missed while the subscription
      #   was lost: look at both), or nil when the timeout passed.
      # @asynchronous
      def wait_for_wake(timeout)
        unless @subscription
          @subscription = subscribe
          return :any if @resubscribing
          @resubscribing = true
        end
        kind, channel, = @subscription.next_event(timeout)
        return unless kind == "message"
        (channel == @keys.schedule_wake) ? :schedule : :queues
      rescue ::RedisClient::Error, IOError => error
        @subscription&.close
        @subscription = nil
        raise ConnectionError, "subscription lost: #{error.message}"
      end

      # Closes the subscription, and the pool when the store built it.
      def close
        @subscription&.close
        @subscription = nil
        return unless @owned
        @pool.respond_to?(:shutdown) ? @pool.shutdown(&:close) : @pool.close
      end

      # Runs a block with a connection from the pool, turning connection failures into ConnectionError.
      # A fiber pool used outside a reactor (a script, a console) gets a short-lived one.
      def with(&block)
        return Sync { with(&block) } if @checkout == :acquire && defined?(Async::Task) && !Async::Task.current?
        @pool.public_send(@checkout, &block)
      rescue ::RedisClient::CannotConnectError, ::RedisClient::ConnectionError => error
        raise ConnectionError, "Redis #{@config&.server_url || ""} is unreachable: #{error.message}"
      rescue ::RedisClient::CommandError => error
        if error.message.start_with?("MOVED ", "ASK ")
          raise ConnectionError, "namespace #{@keys.namespace.inspect} lives on Redis Cluster node #{error.message.split[2]}, " \
            "not on #{@config&.server_url || "this node"}: point redis_url at that node"
        end
        raise unless %w[WRONGPASS NOAUTH].include?(error.code) # a wrong or missing password, as unusable as no Redis
        raise ConnectionError, "Redis #{@config&.server_url || ""} refused the connection (check the password in its URL): #{error.message}"
      end

      private

      def subscribe
        raise ConnectionError, "no Redis config to subscribe with" unless @config
        subscription = @config.new_client.pubsub
        subscription.call("SUBSCRIBE", @keys.wake, @keys.schedule_wake)
        2.times { subscription.next_event(Connection::TIMEOUTS[:read_timeout]) } # the confirmations, not announcements
        subscription
      end

      # Moves due members of a set, DUE_CHUNK at a time, starting with `members` (the first chunk, already read).
      def enqueue_due_from(set, queue_field, now, members)
        total = 0
        loop do
          total += with { |redis| move_due(redis, set, members.map { |member| due_move(member, queue_field, now) }, now) }
          return total if members.size < DUE_CHUNK
          members = with { |redis| redis.call_v(due_range(set, now)) }
          return total if members.empty?
        end
      end

      def due_range(set, now) = ["ZRANGE", set, "-inf", now, "BYSCORE", "LIMIT", 0, DUE_CHUNK]

      # @returns [Array] member, queue, payload to push, and for a batch item from the scheduled set (not a retry, which
      #   runs again as it ran) its batch's name, else nil.
      def due_move(member, queue_field, now)
        data = Payload.load(member)
        queue = data[queue_field] || data["queue"] || "default"
        data["enqueued_at"] = now
        batch = batch_name(queue, data["name"]) if queue_field == "queue" && Batch.item?(data)
        [member, queue, Payload.dump(data), batch]
      rescue Payload::MalformedError
        [member, "default", member, nil]
      end

      # Moves entries of a sorted set as due_move described them: jobs to their queues (move.lua), batch items to
      # their batches (join.lua). @returns [Integer] how many moved.
      def move_due(redis, set, moves, now)
        items, jobs = moves.partition(&:last)
        moved = jobs.empty? ? 0 : move(redis, set, "set", jobs.map { |job| job.first(3) })
        return moved if items.empty?
        keys = [set, @keys.batches, *items.map { |*, batch| @keys.batch(batch) }]
        moved + SCRIPTS[:join].call(redis, keys, [now, *items.flat_map { |member, _, payload, batch| [member, batch, payload] }])
      end

      # Runs move.lua for [item, queue, payload] triples.
      def move(redis, source, kind, moves)
        keys = [source, @keys.queues, *moves.map { |_, queue, _| @keys.queue(queue) }]
        SCRIPTS[:move].call(redis, keys, [@keys.wake, kind, *moves.flatten(1)])
      end
    end
  end
end

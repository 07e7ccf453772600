# frozen_string_literal: true

require_relative "helper"
require "jiggler/server/reaper"

# A job that kills its process (kill -9 of itself) among ordinary jobs, some of them several seconds long so that
# they run beside it: only the killer may end in the dead set. A process that dies holding several jobs pins the
# crash on none of them; they run again side by side, and after a second such death as suspects, which run alone,
# so the killer's last deaths are its own.
# Servers are restarted as they die, on Redis and on SQLite. (Before suspects, the three long jobs fetched with the
# killer died beside it three times and went to the dead set with it.)
StoreTarget.describe_each("poison attribution") do
  include ReliabilityHelper

  def max_crashes = Jiggler::Config::DEFAULTS[:max_crashes]

  # Runs one server at a time until the block is true. When one dies, its jobs are recovered (by the Reaper every
  # server runs, called here so that the next server starts only once they are back at the head of the queue and
  # takes them all again: the killer's neighbours are then in flight at every death it causes), and another starts.
  # @returns [Integer] how many servers died.
  def one_server_at_a_time(timeout:)
    settings = Jiggler::Config.new.tap do |config|
      config[:recovery_timeout] = 2
    end
    reaper = Jiggler::Server::Reaper.new(
      store: store,
      process: "poison-test",
      config: settings,
      logger: Jiggler.logger
    )
    server = nil
    deaths = 0
    wait_for(
      timeout: timeout,
      message: "the killer dead and every ordinary job done"
    ) do
      unless server&.running?
        if server
          deaths += 1
          wait_for(timeout: 10, message: "the jobs of the dead server back") do
            reaper.reap && store.in_flight_count(server_id(server)).zero?
          end
        end
        server = start_reliable("-c", "4", recovery_timeout: 2, wait: false)
        # It may run the killer, and die, as soon as it has started.
        wait_for(timeout: 15, message: "server #{server.pid} to start") do
          server.log.include?("started:") || !server.running?
        end
      end
      yield
    end
    deaths
  end

  it "sends only the job that kills its process to the dead set, " \
    "and runs every other job" do
    long = (1..4).map { |n| ["long-#{n}", 3] }
    short = (1..46).map { |n| ["short-#{n}", 0.05] }
    # In queue order: the killer is among the first four, so a server with 4 workers takes it with long jobs.
    Reliability::SleepJob.enqueue_bulk(long.first(2))
    jid = Reliability::KillJob.enqueue("poison")
    Reliability::SleepJob.enqueue_bulk(long.last(2) + short)
    ordinary = (long + short).map(&:first)

    deaths = one_server_at_a_time(timeout: 150) do
      dead_count = Jiggler.summary["dead_jobs_count"]
      dead_count > 1 ||
        (dead_count == 1 &&
          ordinary.all? { |value| recorded_count("done:#{value}").positive? })
    end

    dead = set_jobs(:dead)
    deliveries = recorded_count("kill:poison")
    puts format(
      "\npoison attribution (%s): killer delivered %d times " \
        "(max_crashes %d), %d of %d ordinary jobs ran, " \
        "%d dead, %d server deaths",
      target_name, deliveries, max_crashes,
      ordinary.count { |value| recorded_count("done:#{value}").positive? },
      ordinary.size, dead.size, deaths
    )
    assert_equal(
      [[jid, "Jiggler::Server::Reaper::PoisonJobError", max_crashes]],
      dead.map { |job| job.values_at("jid", "error_class", "crashes") }
    )
    assert_equal ordinary,
      ordinary.select { |value| recorded_count("done:#{value}").positive? },
      "every ordinary job ran"
    # A death beside other jobs is pinned on the killer once it dies alone: it is dead at max_crashes deliveries.
    assert_equal max_crashes, deliveries
    assert_equal 0, Jiggler.summary["retry_jobs_count"]
    wait_for(message: "nothing left waiting") { store.queue_sizes.empty? }
  end
end

# frozen_string_literal: true

# Memory over a long run: one `exe/jiggler -c 10` server on a private redis-server takes WAVES waves of noop jobs
# (enqueue_bulk, then wait until the processed counter says they ran), and its RSS (VmRSS) is read after each wave.
# A leak shows as RSS rising wave after wave; a steady server levels off after the first waves.
#
#   bundle exec ruby bench/memory.rb              # 10 waves of 100,000 jobs (1M in all): about a minute
#   bundle exec ruby bench/memory.rb 20 50000     # WAVES and JOBS per wave

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "rbconfig"
require "tmpdir"
require "jiggler"
require_relative "harness/main"
require_relative "harness/redis"

waves = Integer(ARGV[0] || 10)
per_wave = Integer(ARGV[1] || 100_000)
dir = Dir.mktmpdir("jiggler-memory")
jobs_file = File.join(dir, "noop_jobs.rb")
File.write(jobs_file, <<~RUBY)
  require "jiggler"
  class NoopJob
    include Jiggler::Job
    def perform = nil
  end
RUBY
require jobs_file

redis = Bench::Redis.new.start
Jiggler.configure { |config| config[:redis_url] = redis.url }
env = {"REDIS_URL" => redis.url, "RUBY_YJIT_ENABLE" => ENV["RUBY_YJIT_ENABLE"]}
server = Process.spawn(
  env,
  RbConfig.ruby, File.expand_path("../exe/jiggler", __dir__),
  "-r", jobs_file, "-c", "10",
  out: File.join(dir, "server.log"), err: [:child, :out]
)
rss = -> { File.read("/proc/#{server}/status")[/VmRSS:\s+(\d+)/, 1].to_i / 1024.0 }
processed = -> { Jiggler.summary["processed_count"] }

begin
  Bench.wait_until(30, "the server to start") do
    File.read(File.join(dir, "server.log")).include?("started:")
  end
  puts "Ruby #{RUBY_VERSION}#{" +YJIT" if ENV["RUBY_YJIT_ENABLE"]}, " \
    "redis #{redis.version}, #{waves} waves of #{per_wave} noop jobs, " \
    "concurrency 10"
  puts "wave         jobs run     RSS MB   seconds"
  puts format("%-8s %12d %10.1f %9s", "start", 0, rss.call, "")
  readings = (1..waves).map do |wave|
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    (1..per_wave).each_slice(10_000) do |slice|
      NoopJob.enqueue_bulk(Array.new(slice.size) { [] })
    end
    Bench.wait_until(600, "wave #{wave}") do
      sleep 0.05
      processed.call >= wave * per_wave
    end
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    rss.call.tap do |mb|
      puts format("%-8d %12d %10.1f %9.2f", wave, wave * per_wave, mb, seconds)
    end
  end
  half = readings.size / 2
  puts format(
    "RSS growth over the second half of the run (waves %d-%d): %+.1f MB",
    half + 1, waves, readings.last - readings[half - 1]
  )
ensure
  Process.kill(:TERM, server)
  Process.wait(server)
  redis.stop
end

# frozen_string_literal: true

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))

require "minitest/autorun"
require "securerandom"
require "jiggler"
require "redis-client"
require_relative "support/redis_server"
require_relative "support/waiting"
require_relative "support/server_process"
require_relative "support/watchdog"

ENV["REDIS_URL"] = RedisServer.instance.url
require_relative "fixtures/jobs"

# Every test gets fresh settings and a namespace of its own in the shared test Redis.
module JigglerTest
  include Waiting
  include Ports

  def setup
    super
    @namespace = "test-#{SecureRandom.hex(6)}"
    Jiggler.reset!
    Jiggler.logger = Logger.new(File::NULL)
    Jiggler.configure { |config| config[:namespace] = @namespace }
    @servers = []
  end

  # A failed test shows what each server it started logged.
  def teardown
    unless passed?
      @servers.each do |server|
        warn("--- server #{server.pid} log:\n#{server.log}")
      end
    end
    @servers.each(&:kill)
    super
  end

  def store = Jiggler.store

  # A raw connection to the test Redis.
  def redis
    @redis ||= RedisClient.new(url: RedisServer.instance.url)
  end

  # Starts `exe/jiggler -r test/fixtures/jobs.rb` with extra flags, in this test's namespace.
  def start_server(*args, env: {}, wait: true)
    server = ServerProcess.new(
      "-r", "./test/fixtures/jobs.rb", *args, namespace: @namespace, env: env
    ).start
    @servers << server
    if wait
      wait_for(message: "server start\n#{server.log}") do
        server.log.include?("started:") || !server.running?
      end
    end
    server
  end

  # The values the fixture jobs recorded, in order.
  def recorded = redis.call("LRANGE", "#{@namespace}:recorded", 0, -1)
end

Minitest::Test.include(JigglerTest)
Minitest::Test.prepend(Watchdog)

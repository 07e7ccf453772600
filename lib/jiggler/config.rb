# frozen_string_literal: true

require_relative "error"
require_relative "config/rules"

module Jiggler
  # Jiggler's settings, shared by the client and the server.
  #
  # Values come from four layers, the later winning: DEFAULTS, the YAML config file, `Jiggler.configure` blocks and
  # command line flags. Every value is checked when it is set, so a typo fails at boot with a message naming the key.
  class Config
    # Raised for an unknown key or a value outside what the key allows.
    class InvalidError < Error; end

    DEFAULTS = {
      client_concurrency: 10,
      client_async: false,
      client_redis_pool: nil,
      redis_url: nil,
      namespace: "jiggler",
      concurrency: 10,
      timeout: 25,
      environment: nil,
      require: nil,
      queues: [["default", 0]],
      config_file: nil,
      mode: :at_least_once,
      stats_interval: 5,
      poller_enabled: true,
      poll_interval: 5,
      dead_max_jobs: 10_000,
      dead_timeout: 180 * 24 * 60 * 60,
      recovery_timeout: 15,
      max_crashes: 3,
      sqlite_path: nil,
      sqlite_synchronous: "normal",
      done_retention: 3600,
      recurring: {},
      recurring_file: nil,
      recurring_missed: :skip
    }.freeze

    # The keys that the client uses; `Jiggler.configure_client` accepts only these.
    CLIENT_KEYS = %i[client_concurrency client_async client_redis_pool redis_url namespace].freeze

    def initialize
      @file = {}
      @code = {}
      @flags = {}
    end

    # Reads a setting.
    # @parameter key [Symbol] one of DEFAULTS' keys.
    # @returns [Object] the value from the highest layer that sets it.
    def [](key)
      @flags.fetch(key) { @code.fetch(key) { @file.fetch(key) { default(key) } } }
    end

    # Sets a setting from code, checking it first.
    # @raises [InvalidError] for an unknown key or a value the key does not allow.
    def []=(key, value)
      @code[key] = Rules.check(key, value)
    end

    # Applies settings read from a config file (the lowest layer above the defaults).
    # @parameter values [Hash(Symbol, Object)]
    def apply_file(values)
      @file = check_all(values)
    end

    # Applies settings given on the command line (the highest layer).
    # @parameter values [Hash(Symbol, Object)]
    def apply_flags(values)
      @flags = check_all(values)
    end

    # The names of the queues to work, the first served first.
    # @returns [Array(String)]
    def queue_names
      self[:queues].map(&:first)
    end

    # Whether jobs live in Redis (a URL is configured) rather than the embedded SQLite file.
    def redis? = !self[:redis_url].nil?

    # Whether a fetched job stays recorded in flight until it has run.
    def at_least_once?
      self[:mode] == :at_least_once
    end

    # Seconds a process's registration lives without a heartbeat: two thirds of `recovery_timeout`, so that the
    # reaper, checking every fifth of it, finds a dead process's jobs within `recovery_timeout`.
    def registration_ttl = self[:recovery_timeout] * 2 / 3.0

    # Seconds between heartbeats: `stats_interval`, or less when needed to beat several times per registration.
    def heartbeat_interval = [self[:stats_interval], self[:recovery_timeout] / 5.0].min

    # Seconds between the reaper's checks for dead processes.
    def reaper_interval = self[:recovery_timeout] / 5.0

    # The cleaner for the configured store.
    # @returns [Cleaner]
    def cleaner
      Cleaner.new(Jiggler.store)
    end

    def freeze
      [@file, @code, @flags].each(&:freeze)
      super
    end

    private

    def default(key)
      case key
      when :environment then ENV["APP_ENV"] || ENV["RAILS_ENV"] || ENV["RACK_ENV"] || "development"
      when :redis_url then ENV["REDIS_URL"]
      when :sqlite_path then ENV["JIGGLER_SQLITE_PATH"] || "./jiggler.sqlite3"
      else DEFAULTS.fetch(key) { raise InvalidError, Rules.unknown_key_message(key) }
      end
    end

    def check_all(values)
      values.to_h { |key, value| [key, Rules.check(key, value)] }
    end
  end
end

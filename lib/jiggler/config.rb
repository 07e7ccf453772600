# frozen_string_literal: true

require_relative "error"
require_relative "config/rules"
require_relative "config/former_settings"
require_relative "middleware/chain"

module Jiggler
  # Jiggler's settings, shared by the client and the server.
  #
  # Values come from four layers, the later winning: DEFAULTS, the YAML config file, `Jiggler.configure` blocks and
  # command line flags. Every value is checked when it is set, so a typo fails at boot with a message naming the key.
  class Config
    DEFAULTS = {
      client_concurrency: 10,
      client_async: false,
      client_redis_pool: nil,
      redis_url: nil,
      database_url: nil,
      namespace: "jiggler",
      concurrency: 10,
      timeout: 25,
      processes: 1,
      environment: nil,
      require: nil,
      queues: [["default", 0]],
      weighted_queues: nil,
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
      error_handlers: [].freeze,
      death_handlers: [].freeze,
      metrics: true,
      metrics_retention: 8 * 3600,
      recurring: {},
      recurring_file: nil,
      recurring_missed: :skip,
      log_format: :plain,
      transactional_enqueue: false
    }.freeze

    # The keys that the client uses; `Jiggler.configure_client` accepts only these.
    CLIENT_KEYS = %i[
      client_concurrency
      client_async
      client_redis_pool
      redis_url
      database_url
      namespace
      transactional_enqueue
    ].freeze

    # @parameter store [#call | Nil] returns the store the cleaner works on (`Jiggler.config` passes `Jiggler.store`).
    def initialize(store: nil)
      @store = store
      @file = {}
      @code = {}
      @flags = {}
      @handlers = {error_handlers: [], death_handlers: []}
      @client_middleware = Middleware::Chain.new
      @server_middleware = Middleware::Chain.new
    end

    # Reads a setting.
    # @parameter key [Symbol] one of DEFAULTS' keys.
    # @returns [Object] the value from the highest layer that sets it.
    def [](key)
      @flags.fetch(key) do
        @code.fetch(key) { @file.fetch(key) { default(key) } }
      end
    end

    # Sets a setting from code, checking it first.
    # A setting of jiggler 0.1.0 that was renamed is set under its new name, with a deprecation warning.
    # @raises [InvalidError] for an unknown key or a value the key does not allow.
    def []=(key, value)
      key, value = FormerSettings.translate(key, value)
      @code[key] = Rules.check(key, value) if key
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

    # The names of the queues to work: by strict priority, the first served first (`queues`), or by weight
    # (`weighted_queues`).
    # @returns [Array(String)]
    def queue_names
      (weighted? ? self[:weighted_queues] : self[:queues]).map(&:first)
    end

    # Whether queues are served by weight: `weighted_queues` is set in a higher layer than `queues` (a config file's
    # `queues` gives way to a `-w` flag, say).
    # @raises [InvalidError] when one layer sets both.
    def weighted?
      layer = [@flags, @code, @file].find do |values|
        values.key?(:queues) || values.key?(:weighted_queues)
      end
      return false unless layer
      if layer.key?(:queues) && layer.key?(:weighted_queues)
        raise InvalidError,
          "set queues (strict priority) or weighted_queues (a share each), " \
          "not both"
      end
      layer.key?(:weighted_queues)
    end

    # The chain around every enqueue (see Middleware::Chain); yields it when given a block.
    # @returns [Middleware::Chain]
    def client_middleware
      yield @client_middleware if block_given?
      @client_middleware
    end

    # The chain around every perform on the server; yields it when given a block.
    # @returns [Middleware::Chain]
    def server_middleware
      yield @server_middleware if block_given?
      @server_middleware
    end

    # What each job runs inside, from the lookup of its class to the record of its outcome: an object whose
    # `call { ... }` yields once (the Rails integration sets the app's executor, or reloader where code reloads). Nil:
    # nothing.
    attr_reader :job_wrapper

    # @parameter wrapper [#call | Nil]
    # @raises [InvalidError] when it does not respond to #call.
    def job_wrapper=(wrapper)
      unless wrapper.nil? || wrapper.respond_to?(:call)
        raise InvalidError,
          "job_wrapper must respond to #call (got #{wrapper.inspect})"
      end
      @job_wrapper = wrapper
    end

    # Where jobs live: PostgreSQL when `database_url` (JIGGLER_DATABASE_URL) is set, else Redis when `redis_url`
    # (REDIS_URL) is, else the embedded SQLite file. The one place the store is chosen (see Store.build).
    # @returns [Symbol] :postgres, :redis or :sqlite.
    def store_kind
      return :postgres if self[:database_url]
      if self[:transactional_enqueue]
        raise InvalidError,
          "transactional_enqueue needs the PostgreSQL store: set " \
          "database_url (or JIGGLER_DATABASE_URL) to the app's database"
      end
      self[:redis_url] ? :redis : :sqlite
    end

    # Whether jobs live in Redis (see `store_kind`).
    def redis? = store_kind == :redis

    # Whether a fetched job stays recorded in flight until it has run.
    def at_least_once?
      self[:mode] == :at_least_once
    end

    # Seconds a process's registration lives without a heartbeat: two thirds of `recovery_timeout`, so that the
    # reaper, checking every fifth of it, finds a dead process's jobs within `recovery_timeout`.
    def registration_ttl = self[:recovery_timeout] * 2 / 3.0

    # Seconds between heartbeats: `stats_interval`, or less when needed to beat several times per registration.
    def heartbeat_interval
      [self[:stats_interval], self[:recovery_timeout] / 5.0].min
    end

    # Seconds between the reaper's checks for dead processes.
    def reaper_interval = self[:recovery_timeout] / 5.0

    # The cleaner for the configured store.
    # @returns [Cleaner]
    # @raises [InvalidError] for a Config built without a store.
    def cleaner
      unless @store
        raise InvalidError,
          "this Config has no store to clean; use Jiggler.config.cleaner " \
          "or Jiggler::Cleaner.new(store)"
      end
      Cleaner.new(@store.call)
    end

    def freeze
      [
        @file,
        @code,
        @flags,
        *@handlers.values,
        @client_middleware,
        @server_middleware
      ].each(&:freeze)
      super
    end

    private

    def default(key)
      case key
      when :environment
        ENV["APP_ENV"] || ENV["RAILS_ENV"] || ENV["RACK_ENV"] || "development"
      when :redis_url then Rules.from_env(:redis_url, "REDIS_URL")
      when :database_url
        Rules.from_env(:database_url, "JIGGLER_DATABASE_URL")
      when :sqlite_path
        Rules.from_env(:sqlite_path, "JIGGLER_SQLITE_PATH") ||
          "./jiggler.sqlite3"
      when :log_format
        Rules.from_env(:log_format, "JIGGLER_LOG_FORMAT") ||
          DEFAULTS[:log_format]
      when :error_handlers, :death_handlers then @handlers[key]
      else DEFAULTS.fetch(key) { renamed(key) }
      end
    end

    # jiggler 0.1.0 code may read a setting by its old name.
    def renamed(key)
      name = FormerSettings.current_name(key)
      raise InvalidError, Rules.unknown_key_message(key) unless name
      self[name]
    end

    def check_all(values)
      values
        .filter_map { |key, value| FormerSettings.translate(key, value) }
        .to_h { |key, value| [key, Rules.check(key, value)] }
    end
  end
end

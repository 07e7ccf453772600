# frozen_string_literal: true

require_relative "jiggler/version"
require_relative "jiggler/error"
require_relative "jiggler/config"
require_relative "jiggler/logger"
require_relative "jiggler/payload"
require_relative "jiggler/store"
require_relative "jiggler/client"
require_relative "jiggler/job"
require_relative "jiggler/iteration"
require_relative "jiggler/result"
require_relative "jiggler/workflow"

# Jiggler is a background job processor on Async fibers. `require "jiggler"` loads the client only: enqueueing and
# configuration; the summary, the cleaner, the executor and JobQueue load when first used, so servers that never use
# them do not carry them. The server (`jiggler/server/launcher`) and the web app load their own parts.
#
# An autoloaded file that requires parts reopening its class opens the class first: a `require` of it by name after
# this file would otherwise have its first part autoload it again, a circular require that `ruby -w` warns of
# (test/load_graph_test.rb).
module Jiggler
  autoload :Summary, File.expand_path("jiggler/summary", __dir__)
  autoload :Cleaner, File.expand_path("jiggler/cleaner", __dir__)
  autoload :Executor, File.expand_path("jiggler/executor", __dir__)
  autoload :JobQueue, File.expand_path("jiggler/job_queue", __dir__)
  autoload :Cancellation, File.expand_path("jiggler/cancellation", __dir__)
  autoload :JobStatus, File.expand_path("jiggler/job_status", __dir__)

  class << self
    # The process-wide settings.
    # @returns [Config]
    def config
      @config ||= Config.new(store: -> { store })
    end

    # Changes settings; each value is checked as it is set.
    # @yields {|config| ...} the Config to set keys on with `config[:key] = value`.
    def configure
      yield config
      reset_client
      load_store(config)
      config
    end

    # Changes the client's settings only: client_concurrency, client_async, client_redis_pool, redis_url,
    # database_url, namespace.
    # @raises [Config::InvalidError] for a server setting.
    def configure_client
      configure { |config| yield ClientSettings.new(config) }
    end

    # Counters, set sizes, live processes and non-empty queues, as one Hash with string keys.
    # @returns [Hash]
    def summary
      Summary.new(store).to_h
    end

    # Waits for the result of a job whose class sets `result_ttl`, without blocking other fibers.
    # @parameter jid [String] the id `enqueue` returned.
    # @parameter timeout [Numeric] seconds to wait at most.
    # @returns [Object] the job's return value (for a batch item: its batch's).
    # @raises [JobFailed] when the job died, with its error class and message.
    # @raises [TimeoutError] when no result came in time.
    def result(jid, timeout: 5) = Result.wait(store, jid, timeout)

    # Cancels a job wherever it is: taken out if it waits (queued, scheduled, retrying, waiting for a concurrency slot
    # or in a batch), in one atomic store step; if it runs, stopped at its next I/O by the process that runs it (its
    # `ensure` blocks run; `cancelled?` turns true). Either way it ends in the dead set, marked cancelled with `by`,
    # neither retried nor counted as a failure (docs/long-jobs.md).
    # @parameter jid [String] the id `enqueue` returned.
    # @parameter by [String] who cancels, recorded on the job.
    # @returns [Symbol] :removed when it was waiting, :requested when it was not found waiting (running, or gone).
    def cancel(jid, by: "Jiggler.cancel (pid #{Process.pid})")
      Cancellation.cancel(store, jid, by: by, config: config)
    end

    # Where a job is now: running (with its progress), scheduled, retry, dead, cancelled, waiting (for a concurrency
    # slot, its rate's budget or its workflow dependencies), batched (an item before its batch forms), queued, done or
    # failed (for a class with `result_ttl`), or unknown (finished, or never enqueued). See JobStatus for what it reads.
    # @parameter jid [String] the id `enqueue` returned.
    # @returns [Hash] "state", and what goes with it ("queue", "class", "at", "progress", "error_class", "by", ...).
    def status(jid) = JobStatus.lookup(store, jid)

    # The client that `Job.enqueue` writes through.
    # @returns [Client]
    def client
      @client ||= Client.new(
        Store.client(config),
        middleware: config.client_middleware
      )
    end

    # Makes this process enqueue through another client (the server installs its fiber-aware one).
    attr_writer :client

    # The store the client and the summary use.
    def store = client.store

    # The logger jiggler and jobs write to; any Logger-compatible object can be set.
    def logger
      @logger ||= Logger.build(format: config[:log_format])
    end

    attr_writer :logger

    # Forgets the settings and the client, closing its store: the next use starts from the defaults. For tests.
    def reset!
      reset_client
      @config = nil
    end

    private

    # A Redis or PostgreSQL store's library (redis-client, which loads openssl: about 50 ms; pg) loads when the app
    # is configured for that store, not at its first enqueue, which would otherwise wait for it.
    def load_store(config)
      # Through their autoloads, which the stores' files also name.
      case config.store_kind
      when :redis then Store.const_get(:Redis)
      when :postgres then Store.const_get(:Postgres)
      end
    end

    def reset_client
      @client&.store&.close
      @client = nil
    end
  end

  # Lets `configure_client` set the client's keys only.
  class ClientSettings
    def initialize(config)
      @config = config
    end

    def [](key) = @config[key]

    def []=(key, value)
      unless Config::CLIENT_KEYS.include?(
        Config::FormerSettings.current_name(key) || key
      )
        raise Config::InvalidError,
          "configure_client sets only #{Config::CLIENT_KEYS.join(", ")}; " \
          "set #{key.inspect} with Jiggler.configure"
      end
      @config[key] = value
    end
  end
  private_constant :ClientSettings
end

if defined?(Rails::Railtie)
  require_relative "jiggler/rails/railtie"
elsif Gem.loaded_specs.key?("railties")
  # Rails loads after jiggler (`jiggler -r` loads jiggler before the app's files, and a one-file app may require
  # rails after jiggler): the railtie is defined as the app's class is, before it initializes.
  require "active_support/lazy_load_hooks"
  ActiveSupport.on_load(:before_configuration) do
    require_relative "jiggler/rails/railtie"
  end
end

# As in Jiggler.configure: the Redis store named by the environment loads with the gem, not at the first enqueue.
Jiggler::Store.const_get(:Redis) unless ENV.fetch("REDIS_URL", "").empty?

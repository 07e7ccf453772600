# frozen_string_literal: true

require_relative "../config"
require_relative "../logger"

module Jiggler
  module Rails
    # Boots a Rails app for `jiggler -r .` (or `-r ./config/environment.rb`) and checks that it can run jobs on
    # fibers: the fiber isolation level, so each job has its own Active Record connection, and a connection pool
    # no smaller than the concurrency, so no job waits for a connection.
    module Boot
      module_function

      # Loads the `-r` file; for a Rails app, in the configured environment and eager-loaded outside development.
      # @parameter file [String] an absolute path.
      # @parameter config [Config]
      # @parameter eager_load [Boolean] false for a command that runs no job (`jiggler status -r .`).
      def require_app(file, config, eager_load: true)
        if file.end_with?("config/environment.rb")
          # the environment jiggler resolved (-e, APP_ENV, RAILS_ENV) is the app's
          ENV["RAILS_ENV"] = config[:environment]
        end
        require file
        return unless eager_load && app?
        unless ::Rails.env.development? || ::Rails.application.config.eager_load
          ::Rails.application.eager_load!
        end
      end

      # Whether the `-r` file booted a Rails app.
      def app? = defined?(::Rails.application) && !::Rails.application.nil?

      # Checks the app's settings and sends jiggler's log to standard output too.
      # @raises [Config::InvalidError] saying exactly what to change.
      def prepare(config)
        check_isolation_level
        check_pool(config[:concurrency])
        log_to_stdout(config[:log_format])
      end

      def check_isolation_level
        level = ActiveSupport::IsolatedExecutionState.isolation_level
        return if level == :fiber
        raise Config::InvalidError,
          "jiggler runs jobs on fibers: add " \
          "`config.active_support.isolation_level = :fiber` " \
          "to config/application.rb (it is #{level.inspect}), " \
          "so that jobs running at once " \
          "do not share an Active Record connection"
      end

      def check_pool(concurrency)
        unless defined?(::ActiveRecord::Base) &&
            ::ActiveRecord::Base.configurations
                .configs_for(env_name: ::Rails.env)
                .any?
          return
        end
        size = ::ActiveRecord::Base.connection_pool.size
        return if size >= concurrency
        raise Config::InvalidError,
          "the #{::Rails.env} database pool (#{size}) " \
          "is smaller than jiggler's concurrency (#{concurrency}): " \
          "set `pool: #{concurrency}` for #{::Rails.env} " \
          "in config/database.yml, or run jiggler with -c #{size}"
      end

      # A Rails logger that writes only to a file (as in development) also writes jiggler's lines to standard output,
      # in the `log_format` of the setting.
      def log_to_stdout(format)
        logger = ::Rails.logger
        unless logger.respond_to?(:broadcast_to) &&
            !ActiveSupport::Logger.logger_outputs_to?(logger, $stdout, $stderr)
          return
        end
        logger.broadcast_to(
          Logger.build($stdout, format: format).tap do |stdout|
            stdout.level = logger.level
          end
        )
      end
    end
  end
end

# frozen_string_literal: true

require "optparse"
require "stringio"
require_relative "../jiggler"
require_relative "config/yaml_file"
require_relative "rails/boot"
require_relative "config/recurring_file"
require_relative "server/supervisor"
# named by `run`'s rescue, which a signal during the boot may reach first
require_relative "store/connection_error"

module Jiggler
  # The `jiggler` command: reads flags, the config file and the `-r` file, then runs a server until TERM or INT.
  # Signals only write to a pipe; the reactor reads it and acts: INT/TERM stop (a second one stops at once),
  # TSTP quiets, TTIN logs every task's backtrace.
  # HUP, USR1 and USR2 are logged and ignored: jiggler logs to standard output and reopens no
  # file, and their default would end the process.
  class CLI
    # A reason to exit before starting, printed as one line.
    class StartError < Error; end

    SIGNAL_ACTIONS = {
      "INT" => :stop, "TERM" => :stop, "TSTP" => :quiet, "TTIN" => :dump,
      "HUP" => :ignore, "USR1" => :ignore, "USR2" => :ignore
    }.freeze
    # The first words that run an admin command (CLI::Admin) instead of a server.
    ADMIN_COMMANDS = %w[
      status
      queues
      pause
      resume
      clear
      retry
      kill
      delete
      quiet
      stop
      cancel
      job
      workflow
    ].freeze
    DEFAULT_CONFIG_FILE = "config/jiggler.yml"
    QUEUE_FORMS = "-q takes queue names (-q default,mailers) or one queue " \
      "and an integer priority (-q critical,10)"
    INTEGER = /\A[+-]?\d+\z/
    # Seconds past `timeout` a stopping server is given before it exits regardless.
    STOP_GRACE = 4.5

    # Runs the command.
    # @parameter argv [Array(String)]
    # @returns [Integer] the exit status.
    def self.run(argv) = new.run(argv)

    def run(argv)
      $stdout.sync = true # log lines reach files and pipes as they are written
      check_encoding(argv)
      return run_web(argv.drop(1)) if argv.first == "web"
      return run_admin(argv) if ADMIN_COMMANDS.include?(argv.first)
      flags = parse(argv)
      return 0 if flags.nil?
      load_server
      configure(flags)
      start_servers
    rescue StartError, Config::InvalidError, OptionParser::ParseError,
      Store::ConnectionError => error
      # an app's error may quote a Redis URL
      warn("jiggler: #{Config::Rules.redact(error.message)}")
      1
    end

    private

    # Every argument must be valid text: OptionParser and the rules for names raise on bytes that are not.
    def check_encoding(argv)
      index = argv.index { |arg| !arg.valid_encoding? } or return
      raise StartError,
        "argument #{index + 1} (#{argv[index].b.inspect}) is not valid " \
        "#{argv[index].encoding} text"
    end

    # `jiggler web`: the dashboard alone (see Web::Command).
    def run_web(argv)
      require_relative "web/command"
      Web::Command.new.run(argv)
    end

    # `jiggler status`, `queues`, `retry`...: the admin commands (see CLI::Admin).
    def run_admin(argv)
      require_relative "cli/admin"
      Admin.new.run(argv)
    end

    # The server's code, loaded before the app and before `-p N` forks: the children share it, and a child the
    # supervisor replaces starts its server without loading it again.
    def load_server = require_relative("server/launcher")

    def parse(argv)
      flags = {}
      parser = options(flags)
      parser.parse!(argv.dup)
      flags
    rescue SystemExit
      nil
    end

    def options(flags)
      OptionParser.new do |opts|
        opts.banner = "Usage: jiggler [options]\n" \
          "       jiggler web [-p PORT] [-o HOST]   " \
          "(the dashboard; see jiggler web --help)\n" \
          "       jiggler status | queues | pause | resume | clear | retry | " \
          "kill | delete | quiet | stop | cancel | job | workflow" \
          "   (see jiggler status -h)"
        opts.on("-c", "--concurrency INT", Integer,
          "jobs run at once (default 10)") { |v| flags[:concurrency] = v }
        opts.on("-e", "--environment ENV",
          "environment (default $APP_ENV or development)") do |v|
          flags[:environment] = v
        end
        opts.on("-q", "--queue QUEUE1,QUEUE2",
          "queues to work, first listed served first (-q a,b,c);",
          "or one queue and its priority, higher first (-q critical,10); " \
          "repeat -q for more") do |value|
          (flags[:queues] ||= []).concat(queue_flag(value))
        end
        opts.on("-w", "--weighted-queue QUEUE,WEIGHT",
          "a queue served by weight, a share of the jobs each",
          "(-w critical,6 -w default,3 -w low,1); instead of -q") do |value|
          (flags[:weighted_queues] ||= []) << weighted_queue_flag(value)
        end
        opts.on("-p", "--processes N",
          "server processes to fork: 1 to #{Server::Supervisor.max} " \
          "on this machine,",
          "or auto for one per core (default 1)") do |value|
          flags[:processes] = processes_flag(value)
        end
        opts.on("-r", "--require PATH",
          "file that loads your jobs, or a Rails app directory") do |v|
          flags[:require] = v
        end
        opts.on("-t", "--timeout NUM", Float,
          "seconds to let jobs finish on shutdown (default 25)") do |value|
          flags[:timeout] = (value % 1).zero? ? value.to_i : value
        end
        opts.on("-v", "--verbose", "log debug messages") do
          flags[:verbose] = true
        end
        opts.on("-C", "--config PATH",
          "YAML config file " \
          "(default #{DEFAULT_CONFIG_FILE} if present)") do |v|
          flags[:config_file] = v
        end
        opts.on("-V", "--version", "print the version") do
          puts "jiggler #{VERSION}" or exit
        end
        opts.on("-h", "--help", "print this help") { puts opts or exit }
      end
    end

    # `-q a,b,c` lists queues (jiggler 0.1.0); `-q name,INTEGER` gives one queue a priority (Sidekiq).
    # @returns [Array(String | [String, Integer])]
    def queue_flag(value)
      parts = value.split(",", -1)
      if parts.size == 2 && INTEGER.match?(parts[1])
        return [[parts[0], Integer(parts[1], 10)]]
      end
      if parts.empty? ||
          parts.any? { |part| part.empty? || INTEGER.match?(part) }
        raise StartError, "-q #{value}: #{QUEUE_FORMS}"
      end
      Config::Rules.queues(parts)
      parts
    rescue Config::InvalidError => error
      raise StartError, "-q #{value}: #{error.message}; #{QUEUE_FORMS}"
    end

    # `-p N` or `-p auto`, checked before anything loads: a count past Supervisor.max would fork
    # servers until the machine runs out of memory.
    # @returns [Integer | String]
    def processes_flag(value)
      return value if value == "auto"
      count = Integer(value, 10) if /\A\d+\z/.match?(value)
      max = Server::Supervisor.max
      raise StartError, "-p #{value}: #{too_many(max)}" if count && count > max
      return count if count&.positive?
      raise StartError,
        "-p #{value}: a number of server processes from 1 to #{max}, " \
        "or auto (one per core)"
    end

    def too_many(max)
      per_core = Server::Supervisor::PER_CORE
      "at most #{max} server processes on this machine " \
        "(#{per_core} per core, at least #{Server::Supervisor::LEAST_MAX}); " \
        "for more jobs at once, raise -c"
    end

    # `-w name,WEIGHT`: one queue and its weight.
    # @returns [[String, Integer]]
    def weighted_queue_flag(value)
      name, weight, *rest = value.split(",", -1)
      pair = [name, INTEGER.match?(weight.to_s) ? Integer(weight, 10) : weight]
      unless rest.empty?
        raise Config::InvalidError,
          "takes one queue and a positive integer weight"
      end
      Config::Rules.weighted_queues([pair]).first
    rescue Config::InvalidError => error
      raise StartError,
        "-w #{value}: " \
        "#{error.message.sub(/\Aconfig\[:weighted_queues\] must be /, "")}; " \
        "e.g. -w critical,6"
    end

    def configure(flags)
      config = Jiggler.config
      verbose = flags.delete(:verbose)
      config.apply_flags(flags)
      load_config_file(
        config,
        flags[:config_file] || config[:config_file] || default_config_file
      )
      load_app(config[:require])
      Rails::Boot.prepare(config) if Rails::Boot.app?
      if config[:config_file] && !@config_file_loaded
        load_config_file(config, config[:config_file])
      end
      load_recurring_file(config)
      # the config file or the app may have set it
      Logger.reformat(Jiggler.logger, config[:log_format])
      Jiggler.logger.level = ::Logger::DEBUG if verbose
      Jiggler.store.ping
    end

    def load_config_file(config, path)
      return unless path
      config.apply_file(Config::YAMLFile.load(path, config[:environment]))
      @config_file_loaded = true
    end

    # Tasks of `recurring_file` (config/recurring.yml if present) join those of the config, which win by name; a bad
    # one stops the boot.
    def load_recurring_file(config)
      path = config[:recurring_file] || (
        if ::File.exist?(Config::RecurringFile::DEFAULT_PATH)
          Config::RecurringFile::DEFAULT_PATH
        end
      )
      return unless path
      config[:recurring] = Config::RecurringFile
        .tasks(path, config[:environment])
        .merge(config[:recurring])
    end

    def default_config_file
      DEFAULT_CONFIG_FILE if ::File.exist?(DEFAULT_CONFIG_FILE)
    end

    def load_app(path)
      unless path
        raise StartError,
          "nothing to load: pass the file that defines your jobs with -r FILE"
      end
      file = ::File.directory?(path) ?
        ::File.join(path, "config", "environment.rb") :
        path
      unless ::File.file?(file)
        raise StartError, "cannot load #{file}: no such file"
      end
      Rails::Boot.require_app(::File.expand_path(file), Jiggler.config)
    rescue SystemExit, SignalException, StartError
      raise
    # whatever the file raises becomes one line
    rescue Exception => error # rubocop:disable Lint/RescueException
      raise StartError,
        "#{file} failed to load: " \
        "#{error.class}: #{error.message.lines.first&.strip}"
    end

    # One server in this process, or with `processes` above 1, a supervisor forking that many (see Supervisor).
    # @returns [Integer] the exit status.
    def start_servers
      count = Server::Supervisor.count(Jiggler.config[:processes])
      return serve_status if count == 1
      max = Server::Supervisor.max
      if count > max
        raise StartError, "config[:processes] #{count}: #{too_many(max)}"
      end
      # Connections opened while configuring must not be shared with the children: each opens its own.
      Jiggler.store.close
      Jiggler.client = nil
      stop_timeout = Jiggler.config[:timeout] + STOP_GRACE + 1
      supervisor = Server::Supervisor.new(
        count: count,
        stop_timeout: stop_timeout,
        config: Jiggler.config,
        logger: Jiggler.logger
      )
      supervisor.run { |identity| supervised_status(identity) }
    end

    # A child stopped through the store (`jiggler stop`, the dashboard) says so by its exit status:
    # the supervisor does not replace it.
    def supervised_status(identity)
      status = serve_status(identity)
      @launcher&.stop_requested? ?
        Server::Supervisor::STOPPED_ON_REQUEST :
        status
    end

    def serve_status(identity = nil)
      serve(identity) ? 0 : 1
    rescue Store::ConnectionError => error
      warn("jiggler: #{error.message}")
      1
    end

    # @parameter identity [Server::Identity | Nil] the one a supervisor chose for this child.
    def serve(identity)
      reader, writer = IO.pipe
      alarm = watchdog(Jiggler.config[:timeout] + STOP_GRACE)
      SIGNAL_ACTIONS.each do |signal, action|
        trap(signal) do
          writer.write_nonblock("#{signal}\n", exception: false)
          alarm.write_nonblock(".", exception: false) if action == :stop
        end
      end
      Sync do |task|
        config = Jiggler.config.freeze
        identity ||= Server::Identity.new(config)
        launcher = @launcher = Server::Launcher.new(
          config: config, identity: identity
        )
        launcher.start(parent: task)
        handle_signals(reader, writer, launcher)
      end
    end

    # @returns [Boolean] what the launcher's stop returned.
    def handle_signals(reader, writer, launcher)
      stopping = nil
      while (line = reader.gets)
        case SIGNAL_ACTIONS[line.chomp]
        when :stop
          stopping ?
            launcher.kill :
            (stopping = stop_in_background(launcher, writer))
        when :quiet then launcher.quiet
        when :dump then dump_tasks
        when :ignore
          Jiggler.logger.info(
            "SIG#{line.chomp} ignored (TERM stops, TSTP quiets)"
          )
        else break
        end
      end
      stopping.wait
    end

    # A thread that ends the process if it is still alive `seconds` after the first stop signal: a job that holds the
    # reactor with CPU work cannot be interrupted, and a store that hangs must not keep the process from exiting.
    # Jobs it leaves in flight go back to their queues by another process's reaper.
    # @returns [IO] the pipe to write to when a stop signal arrives.
    def watchdog(seconds)
      reader, writer = IO.pipe
      Thread.new do
        reader.read(1)
        sleep(seconds)
        Jiggler.logger.error(
          "did not stop within #{seconds} s; exiting now, " \
          "unfinished jobs stay in flight for recovery"
        )
        exit!(1)
      end
      writer
    end

    def stop_in_background(launcher, writer)
      Async do
        launcher.stop
      ensure
        writer.puts("STOPPED")
      end
    end

    def dump_tasks
      Thread.list.each do |thread|
        Jiggler.logger.info(
          "thread #{thread.name}: #{thread.backtrace&.first(10)&.join(" < ")}"
        )
      end
      tree = StringIO.new
      Async::Task.current.reactor.print_hierarchy(tree)
      Jiggler.logger.info("tasks:\n#{tree.string}")
    rescue => error
      Jiggler.logger.warn("could not dump tasks: #{error.message}")
    end
  end
end

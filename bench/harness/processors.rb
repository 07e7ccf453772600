# frozen_string_literal: true

require "fileutils"
require "rbconfig"

module Bench
  # The three job processors under test and how to run each in isolation, plus the HTTP workload's reference (:bare,
  # bench/harness/bare_loop.rb: no job system). Ours and the bare loop run from this repository with the project's
  # bundle; Sidekiq 7.x and jiggler 0.1.0 (which shares our gem's name) each have a Gemfile and a
  # BUNDLE_PATH of their own under tmp/bench-bundles/, so nothing they install reaches the project bundle.
  class Processor
    BUNDLES = File.join(ROOT, "tmp", "bench-bundles")
    GEMFILES = {
      sidekiq: %(gem "sidekiq", "~> 7.0" # the newest 7.x whose required Ruby version this Ruby meets\n),
      # 0.1.0 allows async ~> 2.3 and async-io ~> 1.34, but newer async dropped what async-io loads (async/wrapper):
      # pin the releases of its time.
      jiggler010: <<~GEMFILE,
        gem "jiggler", "0.1.0"
        gem "async", "~> 2.3.0"
        gem "async-io", "~> 1.34.0"
        gem "async-pool", "~> 0.3.0"
        gem "debug", ">= 1.0" # its cli.rb requires "debug"
      GEMFILE
      profile: %(gemspec path: #{ROOT.dump}\ngem "stackprof", "~> 0.2"\n),
      # GoodJob and Solid Queue on Rails 7.2 (Rails 8 needs Ruby 3.2), for the postgres workload
      # (bench/postgres_peers.rb). Ours too (our gemspec), for our Active Job adapter in the same Rails app.
      pgpeers: <<~GEMFILE,
        gem "rails", "~> 7.2.0"
        gem "pg", "~> 1.5"
        gem "good_job", "~> 4.0"
        gem "solid_queue", "~> 1.0"
        gemspec path: #{ROOT.dump}
      GEMFILE
      # The Rails 7.2 test bundle plus stackprof, for `--profile --workloads activejob`.
      profile_rails:
        %(eval_gemfile #{File.join(ROOT, "gemfiles", "rails_7_2.gemfile").dump}\ngem "stackprof", "~> 0.2"\n),
      # The same Rails 7.2 bundle plus Sidekiq 7.x, for Sidekiq's own Active Job adapter in the activejob workload.
      sidekiq_rails:
        %(eval_gemfile #{File.join(ROOT, "gemfiles", "rails_7_2.gemfile").dump}\ngem "sidekiq", "~> 7.0"\n)
    }.freeze
    # The Rails app the activejob workload's servers load, and its bundle.
    RAILS_APP = File.join(ROOT, "bench", "rails_app")
    RAILS_GEMFILE = File.join(ROOT, "gemfiles", "rails_7_2.gemfile")
    # Variables of the harness's own environment that must not reach a processor: bundler's and YJIT's.
    LEAKY = /\A(BUNDLE_|BUNDLER_|RUBYOPT\z|RUBYLIB\z|GEM_HOME\z|GEM_PATH\z|RUBY_YJIT_ENABLE\z|REDIS_URL\z|JIGGLER_)/

    attr_reader :kind, :mode, :processes

    # @parameter kind [Symbol] :ours, :sidekiq, :jiggler010, :bare, or :rails and :sidekiq_rails
    #   (inside bench/rails_app).
    # @parameter mode [String | Nil] jiggler 0.1.0's delivery mode ("at_least_once" or "at_most_once").
    # @parameter processes [Integer | Nil] ours only: `jiggler -p N` (nil: no -p flag, one process).
    def initialize(kind, mode: nil, processes: nil)
      @kind = kind
      @mode = mode
      @processes = processes
    end

    def label
      case @kind
      when :ours then "Jiggler #{OURS_VERSION}#{" -p #{@processes}" if @processes}"
      when :bare then "Bare Async loop"
      when :rails then "Jiggler #{OURS_VERSION} (Rails app)"
      when :sidekiq then "Sidekiq #{gem_version("sidekiq")}"
      when :sidekiq_rails then "Sidekiq #{gem_version("sidekiq")} (Rails app)"
      else "Jiggler 0.1.0 #{@mode.tr("_", "-")}"
      end
    end

    def ours? = @kind == :ours

    # Ours (:rails) or Sidekiq (:sidekiq_rails) inside bench/rails_app, on the Rails 7.2 bundle
    # (the activejob workload).
    def rails? = @kind == :rails || @kind == :sidekiq_rails

    def bare? = @kind == :bare

    # Whether the isolated bundle is installed (no network: `bundle check` only reads the lockfile and gems).
    def installed?
      return true if ours? || bare? || @kind == :rails
      File.exist?(lockfile) &&
        system(bundle_env, "bundle", "check", out: File::NULL, err: File::NULL)
    end

    # Installs the isolated bundle.
    # @returns [Boolean] success.
    def install(log)
      return true if ours? || bare? || @kind == :rails
      self.class.install_bundle(bundle_key, log)
    end

    def self.install_bundle(key, log)
      dir = File.join(BUNDLES, key.to_s)
      FileUtils.mkdir_p(dir)
      File.write(File.join(dir, "Gemfile"), gemfile(key))
      # Without the caller's own bundle (`bundle exec ruby bench/postgres_peers.rb` sets RUBYOPT=-rbundler/setup).
      system(
        unleaked_env.merge(bundle_env_for(key)),
        "bundle", "install", "--quiet",
        out: log, err: log
      )
    end

    # Unsets the variables of the harness's own environment that must not reach a processor (LEAKY).
    def self.unleaked_env = ENV.keys.grep(LEAKY).to_h { |name| [name, nil] }

    # The environment every child process of this processor gets.
    def env(extra = {})
      self.class.unleaked_env.merge(bundle_env).merge(extra)
    end

    # The command that starts the server (for the bare loop, `jobs_file` is the URL to get).
    def server_command(jobs_file, concurrency)
      case @kind
      when :ours
        [
          RbConfig.ruby, "-rbundler/setup", File.join(ROOT, "exe", "jiggler"),
          "-r", jobs_file, "-c", concurrency.to_s,
          *(["-p", @processes.to_s] if @processes)
        ]
      when :bare
        [
          RbConfig.ruby, "-rbundler/setup", File.join(__dir__, "bare_loop.rb"),
          jobs_file, concurrency.to_s
        ]
      when :rails
        [
          RbConfig.ruby, "-rbundler/setup", File.join(ROOT, "exe", "jiggler"),
          "-r", RAILS_APP, "-c", concurrency.to_s
        ]
      when :sidekiq
        [
          RbConfig.ruby, "-rbundler/setup", executable("sidekiq", "sidekiq"),
          "-r", jobs_file, "-c", concurrency.to_s, "-q", "default"
        ]
      when :sidekiq_rails
        [
          RbConfig.ruby, "-rbundler/setup", executable("sidekiq", "sidekiq"),
          "-r", RAILS_APP, "-c", concurrency.to_s, "-q", "default"
        ]
      else
        [
          RbConfig.ruby, "-rbundler/setup", executable("jiggler", "jiggler"),
          "-r", jobs_file, "-c", concurrency.to_s
        ]
      end
    end

    # The command that runs the agent (enqueues) in this processor's bundle.
    # (In the Rails app, the agent loads the app, whose initializer loads the jobs file.)
    def agent_command(jobs_file, *args)
      loaded = rails? ? File.join(RAILS_APP, "config", "environment.rb") : jobs_file
      [
        RbConfig.ruby, "-rbundler/setup", File.join(__dir__, "agent.rb"),
        loaded, *args.map(&:to_s)
      ]
    end

    def bundle_env
      return {"BUNDLE_GEMFILE" => File.join(ROOT, "Gemfile")} if ours? || bare?
      if @kind == :rails
        return {"BUNDLE_GEMFILE" => RAILS_GEMFILE, "RAILS_ENV" => "production"}
      end
      # bench/rails_app reads BENCH_QUEUE_ADAPTER: Sidekiq's adapter instead of ours.
      if @kind == :sidekiq_rails
        return self.class.bundle_env_for(:sidekiq_rails).merge(
          "RAILS_ENV" => "production",
          "BENCH_QUEUE_ADAPTER" => "sidekiq"
        )
      end
      self.class.bundle_env_for(bundle_key)
    end

    def self.bundle_env_for(key)
      dir = File.join(BUNDLES, key.to_s)
      # The Rails bundle's gems are installed already: only stackprof or Sidekiq is added
      # (no private copy of Rails to build).
      if key == :profile_rails || key == :sidekiq_rails
        return {"BUNDLE_GEMFILE" => File.join(dir, "Gemfile")}
      end
      {
        "BUNDLE_GEMFILE" => File.join(dir, "Gemfile"),
        "BUNDLE_PATH" => File.join(dir, "gems"),
        "BUNDLE_APP_CONFIG" => File.join(dir, ".bundle")
      }
    end

    def self.lockfile(key) = File.join(BUNDLES, key.to_s, "Gemfile.lock")

    def self.gemfile(key)
      %(source "https://rubygems.org"\n\n#{GEMFILES.fetch(key)})
    end

    # Whether the isolated bundle is installed from the Gemfile it has now.
    def self.bundle_current?(key)
      path = File.join(BUNDLES, key.to_s, "Gemfile")
      File.exist?(lockfile(key)) && File.exist?(path) &&
        File.read(path) == gemfile(key)
    end

    private

    def bundle_key = (@kind == :jiggler010) ? :jiggler010 : @kind

    def lockfile = self.class.lockfile(bundle_key)

    def gem_version(name)
      File.read(lockfile)[/^    #{name} \(([^)]+)\)/, 1]
    rescue Errno::ENOENT
      "?"
    end

    def executable(gem, name)
      @executables ||= {}
      @executables[name] ||= IO.popen(
        env,
        [
          RbConfig.ruby, "-rbundler/setup", "-e",
          "print Gem.bin_path(#{gem.dump}, #{name.dump})"
        ],
        &:read
      )
    end
  end
end

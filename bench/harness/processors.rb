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
      jiggler010: %(gem "jiggler", "0.1.0"\ngem "async", "~> 2.3.0"\ngem "async-io", "~> 1.34.0"\ngem "async-pool", "~> 0.3.0"\ngem "debug", ">= 1.0" # its cli.rb requires "debug"\n),
      profile: %(gemspec path: #{ROOT.dump}\ngem "stackprof", "~> 0.2"\n)
    }.freeze
    # Variables of the harness's own environment that must not reach a processor: bundler's and YJIT's.
    LEAKY = /\A(BUNDLE_|BUNDLER_|RUBYOPT\z|RUBYLIB\z|GEM_HOME\z|GEM_PATH\z|RUBY_YJIT_ENABLE\z|REDIS_URL\z|JIGGLER_)/

    attr_reader :kind, :mode, :processes

    # @parameter kind [Symbol] :ours, :sidekiq, :jiggler010 or :bare.
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
      when :sidekiq then "Sidekiq #{gem_version("sidekiq")}"
      else "Jiggler 0.1.0 #{@mode.tr("_", "-")}"
      end
    end

    def ours? = @kind == :ours

    def bare? = @kind == :bare

    # Whether the isolated bundle is installed (no network: `bundle check` only reads the lockfile and gems).
    def installed?
      return true if ours? || bare?
      File.exist?(lockfile) && system(bundle_env, "bundle", "check", out: File::NULL, err: File::NULL)
    end

    # Installs the isolated bundle.
    # @returns [Boolean] success.
    def install(log)
      return true if ours? || bare?
      self.class.install_bundle(bundle_key, log)
    end

    def self.install_bundle(key, log)
      dir = File.join(BUNDLES, key.to_s)
      FileUtils.mkdir_p(dir)
      File.write(File.join(dir, "Gemfile"), %(source "https://rubygems.org"\n\n#{GEMFILES.fetch(key)}))
      system(bundle_env_for(key), "bundle", "install", "--quiet", out: log, err: log)
    end

    # The environment every child process of this processor gets.
    def env(extra = {})
      base = ENV.keys.grep(LEAKY).to_h { |key| [key, nil] }
      base.merge(bundle_env).merge(extra)
    end

    # The command that starts the server (for the bare loop, `jobs_file` is the URL to get).
    def server_command(jobs_file, concurrency)
      case @kind
      when :ours
        [RbConfig.ruby, "-rbundler/setup", File.join(ROOT, "exe", "jiggler"), "-r", jobs_file, "-c", concurrency.to_s,
          *(["-p", @processes.to_s] if @processes)]
      when :bare then [RbConfig.ruby, "-rbundler/setup", File.join(__dir__, "bare_loop.rb"), jobs_file, concurrency.to_s]
      when :sidekiq then [RbConfig.ruby, "-rbundler/setup", executable("sidekiq", "sidekiq"), "-r", jobs_file, "-c", concurrency.to_s, "-q", "default"]
      else [RbConfig.ruby, "-rbundler/setup", executable("jiggler", "jiggler"), "-r", jobs_file, "-c", concurrency.to_s]
      end
    end

    # The command that runs the agent (enqueues) in this processor's bundle.
    def agent_command(jobs_file, *args)
      [RbConfig.ruby, "-rbundler/setup", File.join(__dir__, "agent.rb"), jobs_file, *args.map(&:to_s)]
    end

    def bundle_env
      return {"BUNDLE_GEMFILE" => File.join(ROOT, "Gemfile")} if ours? || bare?
      self.class.bundle_env_for(bundle_key)
    end

    def self.bundle_env_for(key)
      dir = File.join(BUNDLES, key.to_s)
      {"BUNDLE_GEMFILE" => File.join(dir, "Gemfile"), "BUNDLE_PATH" => File.join(dir, "gems"), "BUNDLE_APP_CONFIG" => File.join(dir, ".bundle")}
    end

    def self.lockfile(key) = File.join(BUNDLES, key.to_s, "Gemfile.lock")

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
      @executables[name] ||= IO.popen(env, [RbConfig.ruby, "-rbundler/setup", "-e", "print Gem.bin_path(#{gem.dump}, #{name.dump})"], &:read)
    end
  end
end

# frozen_string_literal: true

require "test_helper"

describe Jiggler::Config do
  # key => [words the error message must hold, values the key must refuse]
  invalid_values = {
    client_concurrency: ["a positive Integer", [0, -1, 1.5, "10", nil]],
    concurrency: ["a positive Integer up to 10000",
      [0, -3, 2.0, "12", nil, 10_001, 10**20]],
    processes: ["a positive Integer or \"auto\"",
      [0, -1, 1.5, "2", "all", nil]],
    dead_max_jobs: ["a positive Integer", [0, -1, 10.5, "100", nil]],
    timeout: ["a positive number of seconds",
      [0, -1, "25", nil, Float::INFINITY, Float::NAN]],
    stats_interval: ["a positive number of seconds",
      [0, -2, "5", nil, Float::INFINITY]],
    poll_interval: ["a positive number of seconds",
      [0, -0.5, "1", nil, Float::NAN]],
    dead_timeout: ["a positive number of seconds",
      [0, -60, "1d", nil, Float::INFINITY]],
    recovery_timeout: ["a positive number of seconds",
      [0, -1, "15", nil, Float::NAN]],
    max_crashes: ["a positive Integer", [0, -1, 2.5, "3", nil]],
    done_retention: ["a positive number of seconds",
      [0, -1, "3600", nil, Float::INFINITY]],
    metrics: ["true or false", [nil, "true", 1]],
    metrics_retention: ["a positive number of seconds",
      [0, -60, "3600", nil, Float::INFINITY]],
    sqlite_path: ["a non-empty String",
      ["", "  ", ":memory:", "file:jobs?mode=memory&cache=shared",
        "file::memory:?cache=shared", "file:jobs.db?vfs=memdb", :jobs, 1]],
    sqlite_synchronous: ["\"normal\" or \"full\"", ["off", :fast, 1, nil]],
    client_async: ["true or false", [nil, "true", 1, 0, :yes]],
    poller_enabled: ["true or false", [nil, "false", 1, 0, :no]],
    namespace: ["a non-empty String", ["", nil, :jiggler, 1]],
    environment: ["a non-empty String", ["", :production, 1]],
    require: ["a non-empty String", ["", :jobs, 1]],
    redis_url: ["redis://",
      ["localhost:6379", "http://localhost:6379", "", :local, 6379]],
    database_url: ["a postgres:// or postgresql:// URL",
      ["localhost/app", "mysql://db/app", "postgres:", "",
        "postgres://a b@db/app", :pg, 5432]],
    config_file: ["a non-empty String", ["", :jiggler, 1]],
    client_redis_pool: ["#acquire", [Object.new, "pool", 10]],
    queues: ["pairs",
      [[], nil, {"default" => 1}, 5, [""], ["has space"], ["a|b"], ["{x}"],
        [["a"]], [["a", 1, 2]], [["a", "1"]], [["a", 1.5]], [[1, 2]], [nil],
        ["a\tb"], ["\u0001"], ["a" * 129], ["caf\xC3"], [["\xFF".b, 1]]]],
    weighted_queues: ["positive Integer weight",
      [[], {}, nil, "default", {"a" => 0}, {"a" => -1}, {"a" => 1.5},
        {"a" => "2"}, {"has space" => 1}, [["a", 1, 2]], {"" => 1}]],
    mode: [":at_least_once, :at_most_once", [nil, "exactly_once", :fast, 1]],
    error_handlers: ["an Array of objects that respond to #call",
      [nil, -> {}, ["handler"], [nil]]],
    death_handlers: ["an Array of objects that respond to #call",
      [nil, :handler, [1]]],
    recurring: ["a Hash of task names", [nil, [], "every hour", 1]],
    recurring_file: ["a non-empty String", ["", :recurring, 1]],
    recurring_missed: [":skip, :run_once", [nil, "always", :catch_up, 1]],
    log_format: [":plain, :json", [nil, "jsno", :text, 1]],
    transactional_enqueue: ["true or false", [nil, "yes", 1]]
  }

  def with_env(values)
    saved = values.keys.to_h { |name| [name, ENV[name]] }
    values.each { |name, value| ENV[name] = value }
    yield
  ensure
    saved.each { |name, value| ENV[name] = value }
  end

  def config = @config ||= Jiggler::Config.new

  def assert_unchanged(key)
    default = Jiggler::Config::DEFAULTS[key]
    default.nil? ? assert_nil(config[key]) : assert_equal(default, config[key])
  end

  describe "defaults" do
    it "has the documented defaults" do
      assert_equal 10, config[:client_concurrency]
      assert_equal 10, config[:concurrency]
      assert_equal 25, config[:timeout]
      assert_equal [["default", 0]], config[:queues]
      assert_equal ["default"], config.queue_names
      assert_equal "jiggler", config[:namespace]
      assert_equal [false, nil, true, 5], [
        config[:client_async],
        config[:client_redis_pool],
        config[:poller_enabled],
        config[:poll_interval]
      ]
    end

    it "delivers at least once, keeps 10 000 dead jobs for six months and " \
      "loads nothing by default" do
      assert_equal :at_least_once, config[:mode]
      assert config.at_least_once?
      assert_equal 10_000, config[:dead_max_jobs]
      assert_equal 180 * 24 * 60 * 60, config[:dead_timeout]
      assert_nil config[:require]
      assert_nil config[:config_file]
    end

    it "reads redis_url from ENV['REDIS_URL'] when it is read, " \
      "not when the config is made" do
      with_env("REDIS_URL" => "redis://example.test:6390/2") do
        assert_equal "redis://example.test:6390/2", config[:redis_url]
      end
      assert_equal RedisServer.instance.url, config[:redis_url]
      with_env("REDIS_URL" => nil) { assert_nil config[:redis_url] }
    end

    it "checks REDIS_URL like the setting, never showing its password" do
      ["http://user:pw-123@host/0", "redis://:pw-123@[::1", ""].each do |url|
        with_env("REDIS_URL" => url) do
          error = assert_raises(Jiggler::Config::InvalidError) do
            config[:redis_url]
          end
          assert_match(
            /\AREDIS_URL must be a redis:\/\/, rediss:\/\/, unix:\/\/ or redis\+sentinel:\/\/ URL/,
            error.message
          )
          refute_includes error.message, "pw-123"
        end
      end
      error = assert_raises(Jiggler::Config::InvalidError) do
        config[:redis_url] = "redis://u:pw-123@[::1"
      end
      assert_includes error.message,
        %(config[:redis_url] must be a redis://, rediss://, unix:// or ) \
        "redis+sentinel:// URL " \
        '(got a malformed URL (scheme "redis"; the rest not shown))'
    end

    it "reads database_url from ENV['JIGGLER_DATABASE_URL'], checked like " \
      "the setting, never showing its password" do
      with_env(
        "JIGGLER_DATABASE_URL" => "postgresql://app:pw-123@db.test/app"
      ) do
        assert_equal "postgresql://app:pw-123@db.test/app",
          config[:database_url]
      end
      with_env("JIGGLER_DATABASE_URL" => "mysql://app:pw-123@db.test/app") do
        error = assert_raises(Jiggler::Config::InvalidError) do
          config[:database_url]
        end
        assert_equal "JIGGLER_DATABASE_URL must be a postgres:// or " \
          "postgresql:// URL (got \"mysql://***@db.test/app\")", error.message
      end
      error = assert_raises(Jiggler::Config::InvalidError) do
        config[:database_url] = "postgres://u:pw-123@[::1"
      end
      refute_includes error.message, "pw-123"
    end

    it "chooses PostgreSQL by database_url, before redis_url, else Redis, " \
      "else SQLite" do
      with_env("JIGGLER_DATABASE_URL" => nil) do
        config[:redis_url] = "redis://localhost:6379/0"
        assert_equal [:redis, true], [config.store_kind, config.redis?]
        config[:database_url] = "postgres://localhost/app"
        assert_equal [:postgres, false], [config.store_kind, config.redis?]
        config[:database_url] = nil
        config[:redis_url] = nil
        assert_equal :sqlite, config.store_kind
      end
    end

    it "refuses an empty or in-memory JIGGLER_SQLITE_PATH, " \
      "naming the variable" do
      ["", ":memory:"].each do |path|
        with_env("JIGGLER_SQLITE_PATH" => path) do
          error = assert_raises(Jiggler::Config::InvalidError) do
            config[:sqlite_path]
          end
          assert_match(
            /\AJIGGLER_SQLITE_PATH must be a non-empty String naming a file .*\(got #{Regexp.escape(path.inspect)}\)\z/,
            error.message
          )
        end
      end
      with_env("JIGGLER_SQLITE_PATH" => nil) do
        assert_equal "./jiggler.sqlite3", config[:sqlite_path]
      end
    end

    it "takes the environment from APP_ENV, then RAILS_ENV, then RACK_ENV, " \
      "else development" do
      with_env(
        "APP_ENV" => "staging",
        "RAILS_ENV" => "rails",
        "RACK_ENV" => "rack"
      ) do
        assert_equal "staging", config[:environment]
      end
      with_env("APP_ENV" => nil, "RAILS_ENV" => nil, "RACK_ENV" => "rack") do
        assert_equal "rack", config[:environment]
      end
      with_env("APP_ENV" => nil, "RAILS_ENV" => nil, "RACK_ENV" => nil) do
        assert_equal "development", config[:environment]
      end
    end

    it "prefers a set environment over APP_ENV" do
      with_env("APP_ENV" => "staging") do
        config[:environment] = "myenv"
        assert_equal "myenv", config[:environment]
      end
    end
  end

  describe "validation" do
    invalid_values.each do |key, (allowed, values)|
      it "refuses bad values for #{key}, naming the key and what it allows" do
        values.each do |value|
          error = assert_raises(
            Jiggler::Config::InvalidError,
            "#{key} = #{value.inspect}"
          ) { config[key] = value }
          assert_includes error.message, "config[:#{key}]"
          assert_includes error.message, allowed
        end
        # defaults read from ENV
        unless %i[
          redis_url database_url environment sqlite_path log_format
        ].include?(key)
          assert_unchanged(key)
        end
      end
    end

    it "has a rule for every key" do
      assert_equal Jiggler::Config::DEFAULTS.keys.sort, invalid_values.keys.sort
    end

    it "accepts the values each key allows" do
      pool = Struct.new(:acquire).new
      values = {
        client_concurrency: 12,
        concurrency: 1,
        timeout: 0.5,
        stats_interval: 12,
        poll_interval: 0.1,
        dead_timeout: 3600,
        dead_max_jobs: 5,
        client_async: true,
        poller_enabled: false,
        namespace: "app",
        environment: "myenv",
        require: "./jobs.rb",
        redis_url: "redis://localhost:6379/1",
        config_file: "./jiggler.yml",
        client_redis_pool: pool,
        error_handlers: [->(_, _) {}],
        death_handlers: [method(:puts)],
        log_format: :json
      }
      values.each { |key, value| config[key] = value }
      values.each { |key, value| assert_equal value, config[key], key.inspect }
    end

    it "accepts nil for the optional settings" do
      %i[require config_file client_redis_pool].each do |key|
        config[key] = nil
        assert_nil config[key]
      end
    end

    it "accepts a ConnectionPool (#with) as client_redis_pool" do
      pool = ConnectionPool.new(size: 1) do
        RedisClient.new(url: RedisServer.instance.url)
      end
      config[:client_redis_pool] = pool
      assert_same pool, config[:client_redis_pool]
    end

    it "refuses an unknown key when set and when read, " \
      "listing the known keys" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        config[:concurency] = 5
      end
      assert_includes error.message, ":concurency"
      assert_includes error.message, "concurrency, timeout"
      assert_raises(Jiggler::Config::InvalidError) { config[:nope] }
      assert_raises(Jiggler::Config::InvalidError) do
        config.apply_file(nope: 1)
      end
    end
  end

  describe "queues" do
    it "turns names into [name, 0] pairs and keeps their order" do
      config[:queues] = ["shippers", "mailers", :default]
      assert_equal [["shippers", 0], ["mailers", 0], ["default", 0]],
        config[:queues]
      assert_equal %w[shippers mailers default], config.queue_names
    end

    it "accepts one name as a String" do
      config[:queues] = "critical"
      assert_equal [["critical", 0]], config[:queues]
    end

    it "orders by priority, highest first, ties keeping the listed order" do
      config[:queues] = [
        ["low", -1], "a", ["high", 5], ["b", 0], ["mid", 2], "c", ["top", 5]
      ]
      assert_equal %w[high top mid a b c low], config.queue_names
      assert_equal [["high", 5], ["top", 5], ["mid", 2], ["a", 0], ["b", 0],
        ["c", 0], ["low", -1]], config[:queues]
    end

    it "accepts Symbol names in pairs" do
      config[:queues] = [[:mailers, 1], :default]
      assert_equal [["mailers", 1], ["default", 0]], config[:queues]
    end

    it "names the bad entry in the error" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        config[:queues] = ["good", ["bad name", 1]]
      end
      assert_includes error.message, "config[:queues]"
      assert_includes error.message, '["bad name", 1]'
      assert_equal [["default", 0]], config[:queues]
    end
  end

  describe "mode" do
    it "accepts both modes as Symbols or Strings" do
      [
        [:at_least_once, true],
        [:at_most_once, false],
        ["at_least_once", true],
        ["at_most_once", false]
      ].each do |mode, least|
        config[:mode] = mode
        assert_equal mode.to_sym, config[:mode]
        assert_equal least, config.at_least_once?
      end
    end
  end

  describe "layers" do
    it "takes flags over code over file over defaults" do
      config.apply_file(concurrency: 2, timeout: 3, poll_interval: 4)
      config[:concurrency] = 5
      config[:timeout] = 6
      config.apply_flags(concurrency: 7)
      assert_equal [7, 6, 4],
        [config[:concurrency], config[:timeout], config[:poll_interval]]
      assert_equal Jiggler::Config::DEFAULTS[:stats_interval],
        config[:stats_interval]
    end

    it "keeps the order of the layers whatever order they are applied in" do
      config.apply_flags(concurrency: 7)
      config[:concurrency] = 5
      config[:timeout] = 6
      config.apply_file(concurrency: 2, timeout: 3)
      assert_equal [7, 6], [config[:concurrency], config[:timeout]]
    end

    it "checks and normalizes file and flag values like code values" do
      config.apply_file(queues: ["a", ["b", 3]], mode: "at_most_once")
      config.apply_flags(queues: "c")
      assert_equal [["c", 0]], config[:queues]
      assert_equal :at_most_once, config[:mode]
      error = assert_raises(Jiggler::Config::InvalidError) do
        config.apply_flags(concurrency: 0)
      end
      assert_includes error.message, "config[:concurrency]"
    end

    it "leaves a layer as it was when one of its values is refused" do
      config.apply_file(concurrency: 2)
      assert_raises(Jiggler::Config::InvalidError) do
        config.apply_file(concurrency: 3, timeout: -1)
      end
      assert_equal 2, config[:concurrency]
      assert_raises(Jiggler::Config::InvalidError) { config[:concurrency] = 0 }
      assert_equal 2, config[:concurrency]
    end

    it "refuses changes once frozen" do
      config[:concurrency] = 4
      config.freeze
      assert_raises(FrozenError) { config[:concurrency] = 5 }
      assert_raises(FrozenError) { config.apply_flags(concurrency: 5) }
      assert_equal 4, config[:concurrency]
    end
  end

  describe "jiggler 0.1.0's setting names" do
    it "sets a renamed setting under its new name, " \
      "with a one-line deprecation warning" do
      _, err = capture_io do
        config[:max_dead_jobs] = 500
        config[:async_client] = true
      end
      assert_equal [500, true], [config[:dead_max_jobs], config[:client_async]]
      assert_equal 500, config[:max_dead_jobs],
        "reading by the old name gives the new setting"
      assert_equal [
        "jiggler: config[:max_dead_jobs] is deprecated; " \
          "use config[:dead_max_jobs]\n",
        "jiggler: config[:async_client] is deprecated; " \
          "use config[:client_async]\n"
      ], err.lines
    end

    it "checks a renamed setting's value under its new name" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        capture_io { config[:max_dead_jobs] = 0 }
      end
      assert_includes error.message,
        "config[:dead_max_jobs] must be a positive Integer"
    end

    it "turns guaranteed_execution into mode" do
      capture_io { config.apply_file(guaranteed_execution: false) }
      assert_equal :at_most_once, config[:mode]
      _, err = capture_io { config[:guaranteed_execution] = true }
      assert_equal :at_least_once, config[:mode]
      assert_match(
        /config\[:guaranteed_execution\] is deprecated; use config\[:mode\] = :at_least_once/,
        err
      )
      assert_raises(Jiggler::Config::InvalidError) do
        config[:guaranteed_execution] = "yes"
      end
    end

    it "ignores a setting that no longer exists, saying why in one line" do
      _, err = capture_io do
        config.apply_file(
          concurrency: 4,
          stats_enabled: true,
          fetchers_concurrency: 2
        )
        config[:in_process_interval] = 10
      end
      assert_equal 4, config[:concurrency]
      assert_equal 3, err.lines.size
      assert_match(
        /config\[:stats_enabled\] \(jiggler 0.1.0\) no longer exists and is ignored: statistics are always kept/,
        err
      )
      assert_match(/fetchers_concurrency.*ignored/, err)
      assert_match(/in_process_interval.*ignored/, err)
    end

    it "still refuses a key that never existed" do
      assert_raises(Jiggler::Config::InvalidError) { config[:max_dead_job] = 1 }
      assert_raises(Jiggler::Config::InvalidError) { config[:max_dead_job] }
    end

    it "lets configure_client set client_async by its 0.1.0 README name" do
      capture_io do
        Jiggler.configure_client { |client| client[:async_client] = true }
      end
      assert_equal true, Jiggler.config[:client_async]
    end
  end

  describe "Jiggler.configure" do
    it "sets code values on the process-wide config and returns it" do
      result = Jiggler.configure do |config|
        config[:concurrency] = 12
        config[:queues] = ["shippers"]
      end
      assert_same Jiggler.config, result
      assert_equal [12, ["shippers"]],
        [Jiggler.config[:concurrency], Jiggler.config.queue_names]
    end

    it "raises InvalidError for a bad value" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.configure { |config| config[:concurrency] = 0 }
      end
      assert_includes error.message, "config[:concurrency]"
      assert_equal 10, Jiggler.config[:concurrency]
    end
  end

  describe "Jiggler.configure_client" do
    it "sets the client keys" do
      pool = ConnectionPool.new(size: 2) do
        RedisClient.new(url: RedisServer.instance.url)
      end
      Jiggler.configure_client do |config|
        config[:client_concurrency] = 12
        config[:client_redis_pool] = pool
        config[:namespace] = "client-ns"
        config[:redis_url] = RedisServer.instance.url
      end
      assert_equal 12, Jiggler.config[:client_concurrency]
      assert_same pool, Jiggler.config[:client_redis_pool]
      assert_equal "client-ns", Jiggler.config[:namespace]
    end

    it "sets client_async" do
      Jiggler.configure_client { |config| config[:client_async] = true }
      assert_equal true, Jiggler.config[:client_async]
    end

    it "refuses every server key, naming it" do
      (
        Jiggler::Config::DEFAULTS.keys - Jiggler::Config::CLIENT_KEYS
      ).each do |key|
        value = Jiggler::Config::DEFAULTS[key]
        error = assert_raises(Jiggler::Config::InvalidError, key.inspect) do
          Jiggler.configure_client { |config| config[key] = value }
        end
        assert_includes error.message, key.inspect
      end
    end

    it "leaves a refused server key unset" do
      assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.configure_client { |config| config[:concurrency] = 3 }
      end
      assert_equal 10, Jiggler.config[:concurrency]
    end

    it "still checks the values of client keys" do
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler.configure_client { |config| config[:client_concurrency] = 0 }
      end
      assert_includes error.message, "config[:client_concurrency]"
    end
  end
end

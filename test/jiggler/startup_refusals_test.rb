# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "fileutils"

# `jiggler` and `jiggler web` refuse to start on a store they cannot use: one line naming the setting, a non-zero exit,
# never a backtrace, and never a password from a Redis URL.
describe "jiggler and jiggler web refusing to start" do
  def password = "s3cret-Pa55"

  before do
    @tmp = Dir.mktmpdir("jiggler-startup")
    @jobs = File.join(@tmp, "jobs.rb")
    File.write(
      @jobs,
      "class StartupJob\n  include Jiggler::Job\n\n  def perform = nil\nend\n"
    )
  end

  after do
    @servers.each(&:kill)
    stop_password_redis
    FileUtils.rm_rf(@tmp)
  end

  # Runs `exe/jiggler ARGS` (or `exe/jiggler web -p PORT` with web: true) until it exits.
  # @returns [Array(Integer, String)] the exit status and the output.
  def run_command(*args, env:, web: false)
    args = ["web", "-p", free_port.to_s, *args] if web
    process = ServerProcess.new(
      *args,
      namespace: @namespace,
      env: {"APP_ENV" => nil, "RAILS_ENV" => nil}.merge(env)
    ).start
    @servers << process
    status = process.wait(timeout: 20)
    assert status, "jiggler #{args.join(" ")} did not exit:\n#{process.log}"
    [status, process.log]
  end

  def assert_refused(status, output, reason, web: false)
    refute_equal 0, status, output
    assert_equal 1, output.lines.size, "one line, got:\n#{output}"
    assert_match(web ? /\Ajiggler web: / : /\Ajiggler: /, output)
    assert_match reason, output
    refute_match(/:in `|^\s+from /, output)
    refute_includes output, password
  end

  # Both commands, refused for the same reason.
  def assert_both_refused(reason, env:)
    status, output = run_command("-r", @jobs, env: env)
    assert_refused(status, output, reason)
    status, output = run_command(env: env, web: true)
    assert_refused(status, output, reason, web: true)
  end

  # A redis-server of this test's own that wants the password.
  def start_password_redis
    port = free_port
    @password_redis = Process.spawn(
      "redis-server",
      "--port", port.to_s,
      "--bind", "127.0.0.1",
      "--save", "",
      "--requirepass", password,
      out: File::NULL,
      err: File::NULL
    )
    wait_for(message: "redis-server with requirepass") { listening?(port) }
    port
  end

  def listening?(port)
    TCPSocket.new("127.0.0.1", port).close
    true
  rescue SystemCallError
    false
  end

  def stop_password_redis
    return unless @password_redis
    Process.kill("TERM", @password_redis)
    Process.wait(@password_redis)
  end

  it "stops without a word when TERM comes while the -r file " \
    "is still loading" do
    booting = File.join(@tmp, "booting")
    File.write(@jobs, "File.write(#{booting.inspect}, \"\")\nsleep 30\n")
    # On the SQLite default, which loads no store class before the -r file.
    process = ServerProcess.new(
      "-r", @jobs,
      namespace: @namespace,
      env: {
        "REDIS_URL" => nil,
        "JIGGLER_SQLITE_PATH" => File.join(@tmp, "jobs.sqlite3")
      }
    ).start
    @servers << process
    wait_for(message: "the -r file to start loading") { File.exist?(booting) }
    process.signal(:TERM)
    process.wait(timeout: 10)
    assert_equal "TERM",
      process.status&.termsig&.then { |number| Signal.signame(number) },
      "ended by the TERM"
    assert_empty process.log, "nothing to report: no backtrace"
  end

  describe "settings" do
    def config_file(text)
      File.join(@tmp, "jiggler.yml").tap { |path| File.write(path, text) }
    end

    it "refuses a concurrency beyond its bound" do
      status, output =
        run_command("-r", @jobs, "-c", "99999999999999999999", env: {})
      assert_refused(status, output,
        /config\[:concurrency\] must be a positive Integer up to 10000 \(got 99999999999999999999\)/)
    end

    it "reports ERB that raises, and ERB syntax errors, as ERB errors " \
      "with the file and line" do
      path = config_file(
        "concurrency: 2\ntimeout: <%= raise \"no timeout for staging\" %>\n"
      )
      status, output = run_command("-r", @jobs, "-C", path, env: {})
      assert_refused(status, output,
        /config file #{Regexp.escape(path)}: ERB at line 2 raised RuntimeError: no timeout for/)
      path = config_file("concurrency: <% if true %>2\n")
      status, output = run_command("-r", @jobs, "-C", path, env: {})
      assert_refused(status, output,
        /config file #{Regexp.escape(path)} has an ERB syntax error: /)
    end

    it "refuses a queue name outside the grammar from -q " \
      "and from the YAML file" do
      status, output = run_command("-r", @jobs, "-q", "bad\u0001name", env: {})
      assert_refused(status, output,
        /config\[:queues\] must be names \(a queue name: 1 to 128 printable characters/)
      status, output = run_command(
        "-r", @jobs,
        "-C", config_file("queues: [\"#{"q" * 129}\"]\n"),
        env: {}
      )
      assert_refused(status, output,
        /config\[:queues\] must be names \(a queue name: 1 to 128 printable characters/)
    end

    it "refuses a mistyped setting with a mapping value " \
      "instead of ignoring it" do
      status, output = run_command(
        "-r", @jobs,
        "-C", config_file("concurency:\n  workers: 5\n"),
        env: {}
      )
      assert_refused(status, output,
        /"concurency", which is neither a setting nor an environment section of settings/)
    end

    # A recurring.yml task checked at boot, on each store: one line naming the file and the task.
    {"redis" => {}, "sqlite" => {"REDIS_URL" => nil}}.each do |store, env|
      it "refuses a recurring task whose class is not a constant's name, " \
        "on #{store}, in one line naming it and the file" do
        recurring = File.join(@tmp, "recurring.yml")
        File.write(
          recurring,
          "count:\n  class: count_job\n  schedule: every minute\n"
        )
        if store == "sqlite"
          env = env.merge(
            "JIGGLER_SQLITE_PATH" => File.join(@tmp, "jobs.sqlite3")
          )
        end
        status, output = run_command(
          "-r", @jobs,
          "-C", config_file("recurring_file: #{recurring}\n"),
          env: env
        )
        assert_refused(status, output,
          /\Ajiggler: #{Regexp.escape(recurring)}: recurring task "count" \
has class "count_job", which is not a class name/)
      end
    end
  end

  describe "the SQLite store" do
    it "refuses an empty or in-memory JIGGLER_SQLITE_PATH, creating nothing" do
      [
        "",
        ":memory:",
        "file:jobs?mode=memory&cache=shared",
        "file::memory:?cache=shared"
      ].each do |path|
        env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => path}
        assert_both_refused(
          /JIGGLER_SQLITE_PATH must be a non-empty String naming a file .*\(got #{Regexp.escape(path.inspect)}\)/,
          env: env
        )
      end
      assert_empty Dir.children(@tmp) - ["jobs.rb"]
    end

    it "refuses sqlite_path \":memory:\" in the config file" do
      config = File.join(@tmp, "jiggler.yml")
      File.write(config, %(sqlite_path: ":memory:"\n))
      status, output =
        run_command("-r", @jobs, "-C", config, env: {"REDIS_URL" => nil})
      assert_refused(status, output,
        /config\[:sqlite_path\] must be a non-empty String naming a file/)
    end
  end

  describe "Redis" do
    it "refuses a malformed REDIS_URL without printing its password: " \
      "server, dashboard and admin command" do
      [
        "http://user:#{password}@localhost/0",
        "redis://:#{password}@[::1",
        "redis:/:#{password}@localhost:6379",
        "redis//:#{password}@localhost:6379",
        ":#{password}@localhost:6379",
        "redis://user:#{password} @localhost",
        "redis://:#{password}@localhost:6379/0 "
      ].each do |url|
        refusal = /REDIS_URL must be a redis:\/\/, rediss:\/\/, unix:\/\/ or \
redis\+sentinel:\/\/ URL \(got (a malformed|"http:\/\/\*\*\*@)/
        assert_both_refused(refusal, env: {"REDIS_URL" => url})
        assert_refused(
          *run_command("status", env: {"REDIS_URL" => url}),
          refusal
        )
      end
    end

    it "refuses a REDIS_URL whose database is not a non-negative integer, " \
      "in one line" do
      [
        "redis://:#{password}@127.0.0.1:6379/abc",
        "redis://127.0.0.1:6379/-1"
      ].each do |url|
        assert_both_refused(
          /REDIS_URL must name its database by a non-negative integer/,
          env: {"REDIS_URL" => url}
        )
      end
    end

    it "refuses a wrong or missing password in one line" do
      port = start_password_redis
      [
        "redis://:wrong@127.0.0.1:#{port}/0",
        "redis://127.0.0.1:#{port}/0"
      ].each do |url|
        assert_both_refused(
          /Redis redis:\/\/127.0.0.1:#{port} refused the connection \
\(check the password in its URL\): (WRONGPASS|NOAUTH)/,
          env: {"REDIS_URL" => url}
        )
      end
      process = ServerProcess.new(
        "-r", @jobs,
        namespace: @namespace,
        env: {"REDIS_URL" => "redis://:#{password}@127.0.0.1:#{port}/0"}
      ).start
      @servers << process
      wait_for(message: "a start with the right password") do
        process.log.include?("started:") || !process.running?
      end
      assert process.running?, process.log
      refute_includes process.log, password
    end

    it "refuses an unreachable Redis in one line" do
      assert_both_refused(
        /unreachable/,
        env: {"REDIS_URL" => "redis://:#{password}@127.0.0.1:#{free_port}/0"}
      )
    end
  end
end

# frozen_string_literal: true

# `bin/rails generate jiggler:install` in an app that `rails new` just made (test/rails/generated_app.rb), then the app
# as a developer first runs it: bin/jiggler in development running the first perform_later job, and Puma with
# `plugin :jiggler` running a server beside it. `rake test:rails` runs this file under each Rails version (gemfiles/).
require "minitest/autorun"
require "yaml"
require "erb"
require "net/http"
require "jiggler"
require "jiggler/config/recurring_file"
require_relative "generated_app"
require_relative "../support/ports"
require_relative "../support/server_process"
require_relative "../support/waiting"

# The app's own test, as its developer would write it with Rails' helpers, run by `bin/rails test`.
GENERATED_APP_HELLO_TEST = <<~RUBY
  require "test_helper"

  class HelloJobTest < ActiveJob::TestCase
    test "Rails' test helpers see the job and run it" do
      path = Rails.root.join("tmp/helper.txt").to_s
      assert_enqueued_with(job: HelloJob, args: [path], queue: "default") { HelloJob.perform_later(path) }
      perform_enqueued_jobs
      assert_performed_jobs 1
      assert_equal "hello from test in \#{Process.pid}", File.read(path)
    end
  end
RUBY

describe "jiggler:install in a new Rails " \
  "#{Gem.loaded_specs["railties"].version} app" do
  include Waiting

  before { @setup = GeneratedApp.setup }
  after do
    @processes&.each do |process|
      warn("--- #{process.pid} log:\n#{process.log}") unless passed?
      process.kill
    end
  end

  # Starts a command in the app, its output to a log file.
  def start(*command, env: {})
    process = ServerProcess.new(
      namespace: "generated",
      command: command,
      chdir: GeneratedApp::DIR,
      env: GeneratedApp::ENVIRONMENT.merge(env)
    ).start
    (@processes ||= []) << process
    process
  end

  def perform_later(path)
    GeneratedApp.run!(
      "bin/rails", "runner", "HelloJob.perform_later(#{path.inspect})"
    )
    # Not just there: File.write creates the file before it writes, and a read in between finds it empty.
    wait_for(timeout: 30, message: "the job's file") do
      File.exist?(path) &&
        File.read(path).then { |text| text unless text.empty? }
    end
  end

  def database_pools
    data = YAML.safe_load(
      ERB.new(GeneratedApp.read("config/database.yml")).result, aliases: true
    )
    %w[development test production].to_h { |env| [env, data.dig(env, "pool")] }
  end

  it "sets the adapter, the isolation level and a pool that holds " \
    "jiggler's jobs in every environment" do
    application = GeneratedApp.read("config/application.rb")
    assert_match(/^require "active_job\/railtie"$/, application)
    assert_match(
      /^    config\.active_job\.queue_adapter = :jiggler$/, application
    )
    assert_match(
      /^    config\.active_support\.isolation_level = :fiber$/, application
    )
    assert_equal(
      {"development" => 15, "test" => 15, "production" => 15}, database_pools
    )
  end

  it "writes config/jiggler.yml, a commented config/recurring.yml, " \
    "bin/jiggler, the Procfile.dev line and the route" do
    settings = Jiggler::Config::YAMLFile.load(
      File.join(GeneratedApp::DIR, "config/jiggler.yml"), "development"
    )
    assert_equal [10, ["default"], 5],
      settings.values_at(:concurrency, :queues, :timeout)
    recurring = File.join(GeneratedApp::DIR, "config/recurring.yml")
    assert_equal(
      {}, Jiggler::Config::RecurringFile.load(recurring, "production")
    )
    assert File.executable?(File.join(GeneratedApp::DIR, "bin/jiggler"))
    assert_equal "web: bin/rails server -p 3000\njobs: bin/jiggler\n",
      GeneratedApp.read("Procfile.dev")
    refute File.exist?(File.join(GeneratedApp::DIR, "Procfile")),
      "no Procfile is made where there was none"
    routes = GeneratedApp.read("config/routes.rb")
    assert_includes routes, %(mount jiggler_web, at: "/jiggler")
    assert_includes routes, "# authenticate :user, ->(user) { user.admin? } do"
    assert_match(/append\s+Procfile.dev/, @setup["first"])
  end

  it "changes nothing when run a second time" do
    assert_equal @setup["after_first"], @setup["after_second"]
    changes = @setup["second"].lines.grep(
      /^\s*(create|insert|append|prepend|gsub|chmod|force|conflict)\s/
    )
    assert_empty changes, @setup["second"]
  end

  it "keeps Rails' test helpers in the app's tests: " \
    "Active Job's test adapter in the test environment" do
    FileUtils.mkdir_p(File.join(GeneratedApp::DIR, "test/jobs"))
    File.write(
      File.join(GeneratedApp::DIR, "test/jobs/hello_job_test.rb"),
      GENERATED_APP_HELLO_TEST
    )
    output, = GeneratedApp.run(
      "bin/rails", "test", "test/jobs", env: {"RAILS_ENV" => "test"}
    )
    assert_match(/^1 runs, 4 assertions, 0 failures, 0 errors/, output)
    assert_match(
      /^  config\.active_job\.queue_adapter = :test$/,
      GeneratedApp.read("config/environments/test.rb")
    )
  end

  it "runs the app's first perform_later job with bin/jiggler in development" do
    server = start("bin/jiggler")
    wait_for(timeout: 60, message: "the server start") do
      server.log.include?("started:") || !server.running?
    end
    assert server.running?, server.log
    path = File.join(GeneratedApp::TMP, "first.txt")
    assert_match(
      /\Ahello from development in #{server.pid}\z/o, perform_later(path)
    )
    assert_probe("ok: 1 live server(s) at work")
    server.signal("TERM")
    assert_equal 0, server.wait(timeout: 30), server.log
    assert_probe("failed: no live server at work", status: 1)
  end

  # `jiggler status -r DIR --probe` loads the app as the server does, and reads the store the server used.
  def assert_probe(verdict, status: 0)
    output, result = GeneratedApp.run(
      ServerProcess::EXE,
      "status", "-r", GeneratedApp::DIR, "--probe", "-q", "default"
    )
    store = "store: SQLite #{File.join(GeneratedApp::DIR, "jiggler.sqlite3")}"
    assert_equal ["#{verdict}; #{store}\n", status], [output, result.exitstatus]
  end

  it "runs a jiggler server beside Puma with plugin :jiggler, " \
    "and stops it with Puma" do
    File.write(
      File.join(GeneratedApp::DIR, "config/puma.rb"), "plugin :jiggler\n",
      mode: "a"
    )
    port = Ports.free_port
    login = {
      "JIGGLER_WEB_USERNAME" => "admin",
      "JIGGLER_WEB_PASSWORD" => "secret"
    }
    puma = start(
      Gem.bin_path("puma", "puma"), "-C", "config/puma.rb", "-p", port.to_s,
      env: login
    )
    child = wait_for(
      timeout: 60, message: "the plugin's server\n#{puma.log}"
    ) do
      if puma.log.include?("started:")
        puma.log[/jiggler server started, pid (\d+)/, 1]&.to_i
      end
    end
    assert_equal "hello from development in #{child}",
      perform_later(File.join(GeneratedApp::TMP, "puma.txt"))
    assert_dashboard(port)
    # Puma stops, then raises SIGTERM again (raise_exception_on_sigterm): it dies by TERM
    puma.signal("TERM")
    puma.wait(timeout: 40)
    assert_equal "TERM",
      puma.status && Signal.signame(puma.status.termsig.to_i),
      "Puma's exit\n#{puma.log}"
    assert_raises(Errno::ESRCH, "the plugin's server outlived Puma") do
      Process.kill(0, child)
    end
  end

  # The dashboard refuses a request without the password, and serves one with it.
  def assert_dashboard(port)
    uri = URI("http://127.0.0.1:#{port}/jiggler/")
    assert_equal "401", Net::HTTP.get_response(uri).code
    request = Net::HTTP::Get.new(uri)
      .tap { |get| get.basic_auth("admin", "secret") }
    assert_equal "200",
      Net::HTTP.start(uri.host, uri.port) { |http| http.request(request) }.code
  end
end

# frozen_string_literal: true

require "test_helper"
require "json"
require "socket"
require "tmpdir"
require "fileutils"

# End-to-end tests of the `jiggler` command: flags, config files, the `-r` file and the ways it refuses to start.
describe "jiggler CLI" do
  # The environment variables that choose a config section; unset so that the developer's shell cannot leak in.
  def no_environment = {"APP_ENV" => nil, "RAILS_ENV" => nil, "RACK_ENV" => nil}

  def jobs_file = File.expand_path("../fixtures/jobs.rb", __dir__)

  before { @tmp = Dir.mktmpdir("jiggler-cli-test") }
  after do
    FileUtils.rm_rf(@tmp)
  end

  # Runs `exe/jiggler` with exactly these arguments until it exits; returns its exit status and output.
  def run_cli(*args, env: {}, timeout: 15)
    process = ServerProcess.new(
      *args,
      namespace: @namespace,
      env: no_environment.merge(env)
    ).start
    @servers << process
    status = process.wait(timeout: timeout)
    assert status,
      "jiggler #{args.join(" ")} did not exit within #{timeout} s:\n" \
      "#{process.log}"
    [status, process.log]
  end

  # Starts `exe/jiggler` with exactly these arguments (no default `-r`) and waits for it to start.
  def start_cli(*args, env: {})
    process = ServerProcess.new(
      *args,
      namespace: @namespace,
      env: no_environment.merge(env)
    ).start
    @servers << process
    wait_for(message: "server start") do
      process.log.include?("started:") || !process.running?
    end
    assert process.running?, "jiggler #{args.join(" ")} exited:\n#{process.log}"
    process
  end

  # Asserts a refusal to start: non-zero status and a single line naming the reason, without a backtrace.
  def assert_refused(status, output, reason)
    refute_equal 0, status,
      "expected a non-zero exit status; output:\n#{output}"
    assert_equal 1, output.lines.size,
      "expected one line of output, got:\n#{output}"
    assert_match(/\Ajiggler: /, output)
    assert_match reason, output
    refute_match(
      /^\s+from |:in `|\.rb:\d+:in /,
      output,
      "the reason should not come with a backtrace"
    )
  end

  def write(name, text)
    path = File.join(@tmp, name)
    FileUtils.mkdir_p(File.dirname(path))
    File.write(path, text)
    path
  end

  # What the running server (the only one in this namespace) reports in the summary.
  def process_info
    processes = wait_for(message: "a registered process") do
      Jiggler.summary["processes"].then { |all| all if all.size == 1 }
    end
    processes.values.first
  end

  describe "informational flags" do
    it "prints the version with -V and exits 0" do
      status, output = run_cli("-V")
      assert_equal 0, status
      assert_equal "jiggler #{Jiggler::VERSION}\n", output
    end

    it "prints the version with --version" do
      status, output = run_cli("--version")
      assert_equal 0, status
      assert_includes output, Jiggler::VERSION
    end

    it "prints usage naming every flag with -h and exits 0" do
      status, output = run_cli("-h")
      assert_equal 0, status
      assert_match(/\AUsage: jiggler/, output)
      %w[-c -e -q -r -t -v -C -V -h].each do |flag|
        assert_match(
          /^\s+#{Regexp.escape(flag)}, --\w+/,
          output,
          "usage should list #{flag}"
        )
      end
      %w[
        --concurrency --environment --queue --require --timeout --verbose
        --config --version --help
      ].each do |flag|
        assert_includes output, flag
      end
      assert_includes output, "-q, --queue QUEUE1,QUEUE2"
      assert_includes output, "(-q a,b,c)"
      assert_includes output, "(-q critical,10)"
    end
  end

  describe "refusing to start" do
    it "exits non-zero with one line when -r is missing" do
      status, output = run_cli
      assert_refused status, output, /-r FILE/
    end

    it "exits non-zero with one line when the -r file does not exist" do
      missing = File.join(@tmp, "missing.rb")
      status, output = run_cli("-r", missing)
      assert_refused status, output, /#{Regexp.escape(missing)}.*no such file/
    end

    it "exits non-zero with one line when the -r file raises" do
      file = write("raises.rb", %(raise "boom while loading jobs"\n))
      status, output = run_cli("-r", file)
      assert_refused status, output,
        /#{Regexp.escape(file)}.*RuntimeError: boom while loading jobs/
    end

    it "exits non-zero with one line when the -r file has a syntax error" do
      file = write("syntax_error.rb", "class Broken\n  def perform(\nend\n")
      status, output = run_cli("-r", file)
      assert_refused status, output, /#{Regexp.escape(file)}.*SyntaxError/
    end

    it "exits non-zero with one line when the -r file raises an Exception " \
      "that is not a StandardError" do
      file = write(
        "raises_exception.rb",
        %(raise Exception, "low-level failure while loading"\n)
      )
      status, output = run_cli("-r", file)
      assert_refused status, output,
        /#{Regexp.escape(file)}.*Exception: low-level failure while loading/
    end

    it "exits non-zero with one line when the -r file requires " \
      "a missing library" do
      file = write("load_error.rb", %(require "no_such_library_for_jiggler"\n))
      status, output = run_cli("-r", file)
      assert_refused status, output, /LoadError.*no_such_library_for_jiggler/
    end

    it "exits non-zero with one line when Redis is unreachable" do
      url = "redis://127.0.0.1:#{free_port}/0"
      status, output = run_cli("-r", jobs_file, env: {"REDIS_URL" => url})
      assert_refused status, output, /unreachable/
    end

    it "exits non-zero with one line for -c 0" do
      status, output = run_cli("-r", jobs_file, "-c", "0")
      assert_refused status, output, /concurrency.*positive Integer.*0/
    end

    it "exits non-zero with one line for a -c that is not a number" do
      status, output = run_cli("-r", jobs_file, "-c", "many")
      assert_refused status, output, /-c many/
    end

    it "exits non-zero with one line for a queue name with a space" do
      status, output = run_cli("-r", jobs_file, "-q", "bad name")
      assert_refused status, output, /queues.*"bad name"/
    end

    it "exits non-zero with one line explaining both -q forms " \
      "for a -q that is neither" do
      ["mail,,billing", "mail,billing,3", ","].each do |value|
        status, output = run_cli("-r", jobs_file, "-q", value)
        assert_refused status, output,
          /-q #{Regexp.escape(value)}: -q takes queue names \
\(-q default,mailers\) or one queue and an integer priority \(-q critical,10\)/
      end
      status, output = run_cli("-r", jobs_file, "-q", "mail,bad name")
      assert_refused status, output,
        /-q mail,bad name: .*"bad name".*-q takes queue names/
    end

    it "exits non-zero with one line for a non-positive timeout" do
      status, output = run_cli("-r", jobs_file, "-t", "0")
      assert_refused status, output, /timeout/
    end

    it "exits non-zero with one line for an argument that is not valid UTF-8" do
      [
        ["-r", jobs_file, "-q", "\xFF".b],
        ["status", "\xFF".b],
        ["pause", "a\xFF".b],
        ["web", "-o", "\xFF".b]
      ].each do |args|
        status, output =
          run_cli(*args, env: {"LANG" => "C.UTF-8", "LC_ALL" => nil})
        assert_refused status, output,
          /argument \d \("a?\\xFF"\) is not valid UTF-8 text/
      end
    end

    it "exits non-zero with one line for an unknown flag" do
      status, output = run_cli("-r", jobs_file, "--no-such-flag")
      assert_refused status, output, /--no-such-flag/
    end

    it "exits non-zero with one line for an invalid value in the config file" do
      config = write("jiggler.yml", "concurrency: lots\n")
      status, output = run_cli("-r", jobs_file, "-C", config)
      assert_refused status, output, /concurrency.*"lots"/
    end

    it "exits non-zero with one line for an invalid value in the chosen " \
      "environment section" do
      config = write(
        "jiggler.yml",
        "concurrency: 2\nproduction:\n  timeout: -5\n"
      )
      status, output =
        run_cli("-r", jobs_file, "-C", config, "-e", "production")
      assert_refused status, output, /timeout.*-5/
    end

    it "exits non-zero with one line for an unknown setting " \
      "in the config file" do
      config = write("jiggler.yml", "concurency: 2\n")
      status, output = run_cli("-r", jobs_file, "-C", config)
      assert_refused status, output, /concurency/
    end

    it "exits non-zero with one line for a config file that is not YAML" do
      config = write("jiggler.yml", "concurrency: [1\n")
      status, output = run_cli("-r", jobs_file, "-C", config)
      assert_refused status, output, /#{Regexp.escape(config)}.*not valid YAML/
    end

    it "exits non-zero with one line for a missing config file" do
      config = File.join(@tmp, "missing.yml")
      status, output = run_cli("-r", jobs_file, "-C", config)
      assert_refused status, output, /#{Regexp.escape(config)}/
    end

    it "does not register a process or take jobs when it refuses to start" do
      RecordJob.enqueue("untouched")
      status, = run_cli("-r", jobs_file, "-c", "0")
      refute_equal 0, status
      assert_empty Jiggler.summary["processes"]
      assert_equal({"default" => 1}, Jiggler.summary["queues"])
    end
  end

  describe "flags" do
    it "applies -c, -t and repeated -q name,priority " \
      "(highest priority first)" do
      server = start_cli(
        "-r", jobs_file,
        "-c", "3",
        "-t", "4",
        "-q", "low,1",
        "-q", "high,5",
        "-q", "mid,3"
      )
      info = process_info
      assert_equal "3", info["concurrency"]
      assert_equal 4.0, Float(info["timeout"])
      assert_equal "high,mid,low", info["queues"]
      assert_includes server.log, "queues high(5), mid(3), low(1)"
    end

    it "works every queue of a comma-separated -q list, as jiggler 0.1.0 did" do
      start_cli("-r", jobs_file, "-q", "default,custom")
      assert_equal "default,custom", process_info["queues"]
      RecordJob.with_options(queue: "custom").enqueue("custom")
      RecordJob.enqueue("default")
      RecordJob.with_options(queue: "other").enqueue("other")
      wait_for(message: "both listed queues worked") do
        recorded.sort == %w[custom default]
      end
      assert_equal({"other" => 1}, Jiggler.summary["queues"])
    end

    it "reads -q name,INTEGER as one queue and its priority, beside a list" do
      start_cli("-r", jobs_file, "-q", "low,high", "-q", "urgent,5")
      assert_equal "urgent,low,high", process_info["queues"]
    end

    it "works the queues given with -q and no others" do
      start_cli("-r", jobs_file, "-q", "mail", "-q", "billing,2")
      RecordJob.with_options(queue: "mail").enqueue("mail")
      RecordJob.with_options(queue: "billing").enqueue("billing")
      RecordJob.enqueue("default")
      wait_for(message: "both listed queues worked") do
        recorded.sort == %w[billing mail]
      end
      assert_equal({"default" => 1}, Jiggler.summary["queues"])
    end

    it "loads DIR/config/environment.rb when -r is a Rails app directory" do
      app = File.join(@tmp, "rails_app")
      write("rails_app/config/environment.rb", <<~RUBY)
        require #{jobs_file.inspect}

        class RailsAppJob
          include Jiggler::Job

          def perform(value) = record("rails:\#{value}")
        end
      RUBY
      start_cli("-r", app)
      store.push("default", [
        JSON.generate(
          "jid" => "rails-1",
          "name" => "RailsAppJob",
          "args" => [1],
          "queue" => "default"
        )
      ])
      RecordJob.enqueue("from-app")
      wait_for(message: "both jobs") { recorded.sort == %w[from-app rails:1] }
    end

    it "refuses a directory without config/environment.rb" do
      status, output = run_cli("-r", @tmp)
      assert_refused status, output,
        %r{#{Regexp.escape(File.join(@tmp, "config", "environment.rb"))}.*no such file}
    end
  end

  describe "config file" do
    def config_yaml = <<~YAML
      concurrency: 3
      timeout: 7
      queues:
        - alpha
        - [beta, 4]
      production:
        concurrency: 8
      staging:
        concurrency: 5
        queues: [gamma]
    YAML

    it "applies the top-level settings, with string keys " \
      "and [name, priority] queues" do
      start_cli("-r", jobs_file, "-C", write("jiggler.yml", config_yaml))
      info = process_info
      assert_equal "3", info["concurrency"]
      assert_equal 7.0, Float(info["timeout"])
      assert_equal "beta,alpha", info["queues"]
    end

    it "applies the section chosen with -e over the top level" do
      start_cli(
        "-r", jobs_file,
        "-C", write("jiggler.yml", config_yaml),
        "-e", "production"
      )
      info = process_info
      assert_equal "8", info["concurrency"]
      assert_equal 7.0, Float(info["timeout"])
      assert_equal "beta,alpha", info["queues"]
    end

    it "applies the section chosen by APP_ENV" do
      start_cli(
        "-r", jobs_file,
        "-C", write("jiggler.yml", config_yaml),
        env: {"APP_ENV" => "staging"}
      )
      info = process_info
      assert_equal "5", info["concurrency"]
      assert_equal "gamma", info["queues"]
    end

    it "prefers -e to APP_ENV" do
      start_cli(
        "-r", jobs_file,
        "-C", write("jiggler.yml", config_yaml),
        "-e", "production",
        env: {"APP_ENV" => "staging"}
      )
      info = process_info
      assert_equal "8", info["concurrency"]
      assert_equal "beta,alpha", info["queues"]
    end

    it "lets command line flags override the file" do
      start_cli(
        "-r", jobs_file,
        "-C", write("jiggler.yml", config_yaml),
        "-e", "staging",
        "-c", "2",
        "-q", "delta,1"
      )
      info = process_info
      assert_equal "2", info["concurrency"]
      assert_equal "delta", info["queues"]
      assert_equal 7.0, Float(info["timeout"]),
        "a setting without a flag keeps the file's value"
    end

    it "runs jiggler 0.1.0's config file: symbol keys, " \
      "a renamed setting warned about, a removed one ignored" do
      config = write(
        "jiggler.yml",
        ":concurrency: 1\n:queues:\n  - [users, 0]\n  - [blep, 3]\n" \
        ":max_dead_jobs: 50\n:stats_enabled: true\n"
      )
      server = start_cli("-r", jobs_file, "-C", config)
      info = process_info
      assert_equal "1", info["concurrency"]
      assert_equal "blep,users", info["queues"]
      assert_includes server.log,
        "jiggler: config[:max_dead_jobs] is deprecated; " \
        "use config[:dead_max_jobs]\n"
      assert_includes server.log,
        "jiggler: config[:stats_enabled] (jiggler 0.1.0) " \
        "no longer exists and is ignored"
      RecordJob.with_options(queue: "users").enqueue("from 0.1.0 config")
      wait_for(message: "the job run") { recorded == ["from 0.1.0 config"] }
    end

    it "evaluates ERB before reading the YAML" do
      config = write("jiggler.yml", <<~YAML)
        concurrency: <%= ENV.fetch("JIGGLER_TEST_CONCURRENCY") %>
        timeout: <%= 2 * 3 %>
      YAML
      start_cli(
        "-r", jobs_file,
        "-C", config,
        env: {"JIGGLER_TEST_CONCURRENCY" => "6"}
      )
      info = process_info
      assert_equal "6", info["concurrency"]
      assert_equal 6.0, Float(info["timeout"])
    end
  end

  describe "logging" do
    it "logs each job's start and finish at debug level with -v" do
      server = start_cli("-r", jobs_file, "-v")
      jid = RecordJob.enqueue("loud")
      wait_for(message: "done line in the log\n#{server.log}") do
        server.log.include?("done RecordJob jid=#{jid}")
      end
      assert_match(
        /DEBUG: start RecordJob jid=#{jid} queue=default/,
        server.log
      )
      assert_match(/DEBUG: done RecordJob jid=#{jid} in [\d.]+ ms/, server.log)
    end

    it "logs no debug lines without -v" do
      server = start_cli("-r", jobs_file)
      RecordJob.enqueue("quiet")
      wait_for(message: "job run") { recorded == ["quiet"] }
      wait_for(message: "job acknowledged") do
        Jiggler.summary["processed_count"] == 1
      end
      refute_includes server.log, "DEBUG"
      refute_includes server.log, "start RecordJob"
    end

    it "logs a failing job's class, jid, queue, attempt and error" do
      server = start_cli("-r", jobs_file)
      jid = FailingJob.with_options(queue: "default").enqueue("logged")
      wait_for(message: "error line in the log\n#{server.log}") do
        server.log.include?("jid=#{jid}")
      end
      line = server.log.lines.find { |text| text.include?("jid=#{jid}") }
      assert_match(/ERROR: /, line)
      assert_includes line, "FailingJob"
      assert_includes line, "queue=default"
      assert_includes line, "attempt=1"
      assert_includes line, "ArgumentError: failed on purpose: logged"
    end

    it "writes JSON lines from its start line on when the config file says " \
      "log_format: json" do
      config = write("jiggler.yml", "log_format: json\n")
      server = start_cli("-r", jobs_file, "-C", config, "-v")
      jid = RecordJob.enqueue("json")
      # The start line carries the jid too: wait for the done line itself, reading only whole lines.
      done = wait_for(message: "done line in the log") do
        server.log.lines
          .select { |line| line.end_with?("\n") }
          .map { |line| JSON.parse(line) }
          .find { |line| line["event"] == "done" }
      end
      assert_match(
        /\Ajiggler .* started: /,
        JSON.parse(server.log.lines.first)["message"]
      )
      assert_equal ["RecordJob", jid, "default"],
        done.values_at("class", "jid", "queue")
    end

    it "refuses a log_format it does not know, in one line" do
      status, output =
        run_cli("-r", jobs_file, env: {"JIGGLER_LOG_FORMAT" => "jsno"})
      assert_refused status, output,
        /JIGGLER_LOG_FORMAT must be one of :plain, :json \(got "jsno"\)/
    end
  end
end

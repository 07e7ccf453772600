# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "jiggler/config/yaml_file"

describe Jiggler::Config::YAMLFile do
  def setup
    super
    @dir = Dir.mktmpdir("jiggler-yaml")
  end

  def teardown
    FileUtils.rm_rf(@dir)
    super
  end

  def write(text, name: "jiggler.yml")
    path = File.join(@dir, name)
    File.write(path, text)
    path
  end

  def load(text, environment = "development")
    Jiggler::Config::YAMLFile.load(write(text), environment)
  end

  def assert_invalid(path, environment = "development")
    error = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler::Config::YAMLFile.load(path, environment)
    end
    assert_includes error.message, path
    error
  end

  it "reads string keys as Symbol settings" do
    settings = load(
      "concurrency: 5\nqueues:\n  - critical\n  - [default, 1]\n" \
      "mode: at_most_once\n"
    )
    assert_equal(
      {
        concurrency: 5,
        queues: ["critical", ["default", 1]],
        mode: "at_most_once"
      },
      settings
    )
  end

  it "runs ERB before parsing" do
    with_value = ENV.fetch("JIGGLER_TEST_CONCURRENCY", nil)
    ENV["JIGGLER_TEST_CONCURRENCY"] = "17"
    settings = load(
      "concurrency: <%= ENV.fetch('JIGGLER_TEST_CONCURRENCY') %>\n" \
      "timeout: <%= 2 * 3 %>\n"
    )
    assert_equal({concurrency: 17, timeout: 6}, settings)
  ensure
    ENV["JIGGLER_TEST_CONCURRENCY"] = with_value
  end

  it "reports ERB that raises as an ERB error, " \
    "naming the file and the line, in one line" do
    path = write(
      "concurrency: 5\n" \
      "timeout: <%= ENV.fetch(\"JIGGLER_TEST_NO_SUCH_VARIABLE\") %>\n"
    )
    error = assert_invalid(path)
    assert_equal "config file #{path}: ERB at line 2 raised KeyError: " \
      "key not found: \"JIGGLER_TEST_NO_SUCH_VARIABLE\"", error.message
  end

  it "reports an ERB syntax error as one, not as invalid YAML" do
    path = write("concurrency: 5\ntimeout: <%= 1 + %>\n")
    error = assert_invalid(path)
    assert_match(
      /\Aconfig file #{Regexp.escape(path)} has an ERB syntax error: #{Regexp.escape(path)}:2: syntax error/,
      error.message
    )
    assert_equal 1, error.message.lines.size
  end

  it "refuses a top-level mapping that is neither a setting " \
    "nor a section of settings" do
    error = assert_invalid(write("concurrency: 5\nconcurency:\n  a: 1\n"))
    assert_includes error.message,
      %("concurency", which is neither a setting nor an environment section of settings ("a" are not settings))
    assert_equal(
      {concurrency: 5},
      load(
        "concurrency: 5\nstaging: {}\nproduction:\n" \
        "  concurrency: 1\n  nope: 2\n"
      )
    )
  end

  it "takes a section that sets only jiggler 0.1.0's setting names " \
    "for an environment section" do
    assert_equal(
      {max_dead_jobs: 7}, load("staging:\n  :max_dead_jobs: 7\n", "staging")
    )
  end

  it "lets the current environment's section override top-level values" do
    text = "concurrency: 5\ntimeout: 10\n" \
      "production:\n  concurrency: 20\n  queues: [critical]\n"
    assert_equal(
      {concurrency: 20, timeout: 10, queues: ["critical"]},
      load(text, "production")
    )
  end

  it "ignores the sections of other environments" do
    text = "concurrency: 5\nproduction:\n  concurrency: 20\n" \
      "staging:\n  timeout: 3\n"
    assert_equal({concurrency: 5}, load(text, "development"))
    assert_equal({concurrency: 5, timeout: 3}, load(text, "staging"))
  end

  it "supports YAML anchors and merge keys between sections" do
    text = "shared: &shared\n  concurrency: 7\n  timeout: 4\n" \
      "production:\n  <<: *shared\n  timeout: 9\n"
    assert_equal({concurrency: 7, timeout: 9}, load(text, "production"))
    assert_equal({}, load(text, "development"))
  end

  it "gives settings that Config#apply_file accepts and checks" do
    config = Jiggler::Config.new
    config.apply_file(
      load(
        "concurrency: 3\nqueues: [low, [high, 2]]\n" \
        "production:\n  concurrency: 30\n"
      )
    )
    assert_equal 3, config[:concurrency]
    assert_equal %w[high low], config.queue_names
    error = assert_raises(Jiggler::Config::InvalidError) do
      config.apply_file(load("concurrency: zero\n"))
    end
    assert_includes error.message, "config[:concurrency]"
  end

  it "reads an empty file as no settings" do
    assert_equal({}, load(""))
    assert_equal({}, load("# only a comment\n"))
  end

  it "raises InvalidError naming the path for a missing file" do
    path = File.join(@dir, "missing.yml")
    error = assert_invalid(path)
    assert_match(/cannot read/, error.message)
  end

  it "raises InvalidError naming the path for a directory" do
    assert_invalid(@dir)
  end

  it "raises InvalidError naming the path for invalid YAML" do
    error = assert_invalid(write("concurrency: [5\ntimeout: : :\n"))
    assert_match(/not valid YAML/, error.message)
  end

  it "raises InvalidError naming the path " \
    "for YAML that would build Ruby objects" do
    assert_invalid(write("concurrency: !ruby/object:Object {}\n"))
    assert_invalid(write(":concurrency: !ruby/object:OpenStruct {}\n"))
    assert_invalid(write("concurrency: !ruby/regexp /a/\n"))
  end

  it "reads jiggler 0.1.0's symbol keys (its spec fixture) as settings, " \
    "sections included" do
    text = ":concurrency: 1\n:queues:\n  - [users, 0]\n  - [blep, 3]\n" \
      ":production:\n  :concurrency: 4\n"
    assert_equal(
      {concurrency: 1, queues: [["users", 0], ["blep", 3]]}, load(text)
    )
    assert_equal(
      {concurrency: 4, queues: [["users", 0], ["blep", 3]]},
      load(text, "production")
    )
    config = Jiggler::Config.new
    config.apply_file(load(":mode: :at_most_once\n:queues:\n  - :mail\n"))
    assert_equal [:at_most_once, %w[mail]], [config[:mode], config.queue_names]
  end

  it "raises InvalidError naming the path when the file is not a mapping" do
    ["- concurrency\n- 5\n", "just a string\n", "42\n"].each do |text|
      error = assert_invalid(write(text))
      assert_match(/mapping/, error.message)
    end
  end

  it "raises InvalidError naming the path for a key that is not a string" do
    assert_invalid(write("concurrency: 5\n1: 2\n"))
    assert_invalid(write("yes: 1\n"))
  end
end

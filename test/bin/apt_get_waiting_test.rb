# frozen_string_literal: true

require "test_helper"
require "open3"
require "tmpdir"
require "fileutils"

# bin/apt-get-waiting against a stand-in apt-get (first on PATH) that reports a held lock a number of times: it waits
# and tries again, within its bound, and bin/test installs packages only through it.
module AptGetWaiting
  SCRIPT = File.expand_path("../../bin/apt-get-waiting", __dir__)
  LOCKED = "E: Could not get lock /var/lib/apt/lists/lock. " \
    "It is held by process 4242 (apt-get)"
end

describe "bin/apt-get-waiting" do
  before do
    @dir = Dir.mktmpdir("jiggler-apt")
    File.write(File.join(@dir, "apt-get"), <<~SH)
      #!/bin/sh
      echo "$*" >> "#{@dir}/calls"
      count=$(wc -l < "#{@dir}/calls")
      if [ "$count" -le "$FAILURES" ]; then echo "$MESSAGE" >&2; exit 100; fi
      echo done
    SH
    FileUtils.chmod(0o755, File.join(@dir, "apt-get"))
  end

  after { FileUtils.rm_rf(@dir) }

  def run_script(
    *args, failures:, message: AptGetWaiting::LOCKED, timeout: "300"
  )
    env = {
      "PATH" => "#{@dir}:#{ENV["PATH"]}",
      "FAILURES" => failures.to_s,
      "MESSAGE" => message,
      "JIGGLER_APT_LOCK_PAUSE" => "0.05",
      "JIGGLER_APT_LOCK_TIMEOUT" => timeout
    }
    output, status = Open3.capture2e(env, AptGetWaiting::SCRIPT, *args)
    [
      status.exitstatus,
      output,
      File.readlines(File.join(@dir, "calls"), chomp: true)
    ]
  end

  it "tries apt-get update again while another apt holds the lock, " \
    "then succeeds" do
    status, output, calls = run_script("update", "-qq", failures: 2)
    assert_equal 0, status, output
    assert_equal ["-o DPkg::Lock::Timeout=300 update -qq"] * 3, calls
    assert_equal 2, output.scan("another apt holds its lock").size
  end

  it "gives up when the lock is still held at its deadline, " \
    "with apt-get's status" do
    status, output, calls = run_script(
      "install", "-y", "redis-server", failures: 99, timeout: "0"
    )
    assert_equal [100, 1], [status, calls.size]
    assert_includes output, AptGetWaiting::LOCKED
  end

  it "fails at once on an error that is not a held lock" do
    status, _, calls = run_script(
      "install", "-y", "nothing",
      failures: 1, message: "E: Unable to locate package nothing"
    )
    assert_equal [100, 1], [status, calls.size]
  end

  it "is how bin/test runs apt-get update and install" do
    lines = File.read(File.expand_path("../../bin/test", __dir__))
      .lines.reject { |line| line.strip.start_with?("#") }
    commands = lines.grep(/apt-get(-waiting)? (update|install)/)
    refute_empty commands
    commands.each do |line|
      assert_match(%r{apt-get-waiting (update|install)}, line)
    end
  end
end

# frozen_string_literal: true

require "test_helper"
require "rbconfig"
require "tmpdir"
require "jiggler/sidecar"

# The child process the Puma plugin runs beside Puma, with small Ruby scripts standing in for the server.
describe Jiggler::Sidecar do
  include Waiting

  before do
    @lines = Thread::Queue.new
    @gave_up = Thread::Queue.new
  end
  after { @sidecar&.stop(5) }

  def sidecar(script, **options)
    @sidecar = Jiggler::Sidecar.new(
      command: [RbConfig.ruby, "-e", script],
      log: ->(line) { @lines << line },
      on_give_up: -> { @gave_up << true },
      **options
    ).start
  end

  def alive?(pid)
    Process.kill(0, pid)
  rescue Errno::ESRCH
    false
  end

  it "starts a child that dies again, " \
    "then gives up after the young deaths in a row" do
    sidecar("exit 1", young: 30, give_up_after: 3)
    # pauses of 1 s then 2 s between the three children
    assert_equal true, @gave_up.pop
    lines = Array.new(@lines.size) { @lines.pop }
    assert_equal 3, lines.grep(/started, pid/).size, lines.join("\n")
    assert_match(
      /died 3 times in a row within 30 s of starting: giving up/, lines.last
    )
  end

  it "does not start again a child stopped on request (exit status 3)" do
    sidecar("exit 3")
    wait_for(message: "the child's exit") { @lines.size >= 2 }
    refute @sidecar.pid
    assert_equal 2, @lines.size
  end

  it "stops its child with TERM, and kills one that outlives the timeout" do
    sidecar("trap('TERM') { exit 0 }; sleep")
    pid = wait_for(message: "the child") { @sidecar.pid }
    @sidecar.stop(5)
    refute alive?(pid)
    ready = File.join(Dir.mktmpdir("jiggler-sidecar"), "ready")
    sidecar("trap('TERM') {}; File.write(#{ready.inspect}, ''); sleep")
    wait_for(message: "the stubborn child's trap") { File.exist?(ready) }
    pid = @sidecar.pid
    @sidecar.stop(0.5)
    refute alive?(pid)
    assert_match(
      /still running 0.5 s after TERM: killing it/,
      Array.new(@lines.size) { @lines.pop }.last
    )
  end
end

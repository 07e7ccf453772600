# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "jiggler/store/sqlite"

describe Jiggler::Store::SQLite::Doorbell do
  let(:database) { File.join(Dir.mktmpdir("jiggler-doorbell"), "jobs.sqlite3") }
  let(:waiter) { Jiggler::Store::SQLite::Doorbell.new(database) }

  after { waiter.close }

  # The directory of a doorbell's sockets.
  def dir(doorbell) = doorbell.instance_variable_get(:@dir)

  def sockets(doorbell) = Dir.children(dir(doorbell))

  it "wakes a waiter of the same database when rung, and only then" do
    refute waiter.wait(0.01), "nothing rang"
    Jiggler::Store::SQLite::Doorbell.new(database).ring
    assert waiter.wait(1)
    refute waiter.wait(0.01), "each ring is read once"
    Jiggler::Store::SQLite::Doorbell.new("#{database}-other").ring
    refute waiter.wait(0.01), "another database's ring is not this one's"
  end

  it "rings a waiter that came in the clock tick of the last listing" do
    ringer = Jiggler::Store::SQLite::Doorbell.new(database)
    waiter.wait(0.001)
    ringer.ring
    assert waiter.wait(1)
    listed = File.mtime(dir(waiter))
    late = Jiggler::Store::SQLite::Doorbell.new(database)
    late.wait(0.001)
    # as the kernel's coarse clock leaves it when the socket came in the same tick
    File.utime(File.atime(dir(waiter)), listed, dir(waiter))
    ringer.ring
    assert late.wait(1), "the waiter bound after the listing is rung"
  ensure
    late&.close
  end

  it "removes the socket of a waiter that died without closing it, " \
    "and its own when closed" do
    waiter.wait(0.001)
    gone = Jiggler::Store::SQLite::Doorbell.new(database)
    gone.wait(0.001)
    # as a kill -9 leaves it: the file, no socket
    gone.instance_variable_get(:@listener).close
    assert_equal 2, sockets(waiter).size
    Jiggler::Store::SQLite::Doorbell.new(database).ring
    assert_equal 1, sockets(waiter).size
    waiter.close
    assert_empty sockets(gone)
  end
end

# frozen_string_literal: true

require "test_helper"
require "tmpdir"
require "jiggler/store/sqlite"
require "support/store_contract"

describe Jiggler::Store::SQLite do
  include StoreContract

  def build_store
    @dir ||= Dir.mktmpdir("jiggler-sqlite")
    Jiggler::Store::SQLite.new(path: File.join(@dir, "jobs.sqlite3"))
  end
end

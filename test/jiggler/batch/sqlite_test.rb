# frozen_string_literal: true

require "test_helper"
require "jiggler/store/sqlite"
require_relative "end_to_end"

describe "batch jobs and results on SQLite" do
  include BatchEndToEnd

  def use_store
    @path = File.join(@dir, "jobs.sqlite3")
    Jiggler.client =
      Jiggler::Client.new(Jiggler::Store::SQLite.new(path: @path))
  end

  # A nil value unsets REDIS_URL in Process.spawn.
  def store_env = {"REDIS_URL" => nil, "JIGGLER_SQLITE_PATH" => @path}
end

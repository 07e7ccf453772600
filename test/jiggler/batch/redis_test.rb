# frozen_string_literal: true

require "test_helper"
require_relative "end_to_end"

describe "batch jobs and results on Redis" do
  include BatchEndToEnd

  def use_store = nil # the test helper's Redis namespace

  def store_env = {}
end

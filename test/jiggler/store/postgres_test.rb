# frozen_string_literal: true

require "test_helper"
require "jiggler/store/postgres"
require "support/store_contract"
require "support/postgres_server"

describe Jiggler::Store::Postgres do
  include StoreContract

  def build_store
    Jiggler::Store::Postgres.new(url: PostgresServer.instance.url, namespace: @namespace, pool_size: 4)
  end

  def teardown
    super
    PG.connect(PostgresServer.instance.url) { |db| db.exec("SET client_min_messages = warning; DROP SCHEMA IF EXISTS \"#{@namespace}\" CASCADE") }
  end
end

# frozen_string_literal: true

require "test_helper"
require "jiggler/store/contract"
require "jiggler/store/sqlite"

# The store contract in code (Store::Contract) against the stores and against contract.md: a method a store lacks, a
# method the document lists but the code does not (or the other way round), fails here.
describe Jiggler::Store::Contract do
  contract = Jiggler::Store::Contract
  stores = {
    "Redis" => Jiggler::Store::Redis,
    "SQLite" => Jiggler::Store::SQLite,
    "Postgres" => Jiggler::Store::Postgres
  }
  document = File.read(
    File.expand_path("../../../lib/jiggler/store/contract.md", __dir__)
  )
  # Each "## " section's text, by title.
  sections = document.split(/^## /).drop(1).to_h do |text|
    [text.lines.first.strip, text]
  end

  stores.each do |name, store|
    it "has #{name} implement every method of every role, " \
      "and the optional ones said to be its" do
      assert_empty(
        contract.required.reject { |method| store.method_defined?(method) },
        "#{name} lacks these"
      )
      contract::OPTIONAL.each do |method, owners|
        assert_equal owners.include?(name),
          store.method_defined?(method),
          "#{name}##{method}: optional, for #{owners.join(", ")}"
      end
    end
  end

  it "has a section of contract.md for each role, naming each of " \
    "its methods" do
    contract::ROLES.each do |role, methods|
      text = sections.fetch(role) do
        flunk("contract.md has no section \"## #{role}\"")
      end
      assert_empty methods.reject { |method| text.include?("`#{method}") },
        "not named in \"## #{role}\""
    end
  end

  it "lists no method in contract.md's tables that the code does not " \
    "declare" do
    listed = document.lines.grep(/\A\| `/).flat_map do |line|
      line.split("|")[1].scan(/`([a-z_]+[?!]?)[(` ]/).flatten
    end
    assert_empty(
      listed.uniq.map(&:to_sym) - contract.required - contract::OPTIONAL.keys
    )
  end
end

# frozen_string_literal: true

require "test_helper"
require "jiggler/store/sqlite"
require "support/web_session"

# The filter of the set pages reads at most Filter::SCAN_LIMIT entries per request, on Redis and on SQLite, and the
# page says where it stopped.
module FilterCases
  def fill_scheduled
    now = Time.now.to_f + 3600
    fillers = Array.new(Jiggler::Web::Filter::SCAN_LIMIT + 49) do |index|
      [now + 1 + index, payload(name: "Filler", args: [])]
    end
    web_store.schedule([
      [now, payload(name: "EarlyJob")],
      *fillers,
      [now + 10**6, payload(name: "LateJob")]
    ])
  end

  def self.included(base)
    base.class_eval do
      it "stops after SCAN_LIMIT entries and says so" do
        fill_scheduled
        get "/scheduled?filter=LateJob"
        assert_equal 200, last_response.status
        assert_includes body, "No job matches this filter."
        assert_includes body,
          "The filter stopped after the first 10,000 jobs of this list; " \
          "the rest were not searched."
        get "/scheduled?filter=EarlyJob"
        assert_includes body, ">EarlyJob</a>"
        assert_includes body, "data-filter-stopped"
      end

      it "pages through matches and says nothing when it read the whole set" do
        now = Time.now.to_f
        web_store.schedule(
          Array.new(60) do |index|
            [now + 60 + index, payload(name: index.even? ? "Even" : "Odd")]
          end
        )
        get "/scheduled?filter=Even"
        assert_equal 25, body.scan(">Even</a>").size
        assert_includes body, "filter=Even&amp;page=2"
        get "/scheduled?filter=Even&page=2"
        assert_equal 5, body.scan(">Even</a>").size
        refute_includes body, "data-filter-stopped"
      end
    end
  end
end

describe "the set filter on Redis" do
  include WebSession
  include FilterCases
end

describe "the set filter on SQLite" do
  include WebSession
  include FilterCases
  include WebSession::OnSQLite
end

describe "the set filter on PostgreSQL" do
  include WebSession
  include FilterCases
  include WebSession::OnPostgres
end

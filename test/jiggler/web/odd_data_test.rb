# frozen_string_literal: true

require "test_helper"
require "jiggler/store/sqlite"
require "support/web_session"
require "support/raw_writes"
require "support/promtool"

# Every page renders whatever the store holds, on Redis and on SQLite: set entries scored ±Infinity (which a huge
# attempt field once made), heartbeats whose fields have unexpected types, job fields of the wrong type, a filter that
# is not UTF-8.
module OddDataCases
  include RawWrites
  include Promtool

  PAGES = %w[/ /stats /busy /queues /scheduled /retries /dead].freeze

  def assert_pages_render(paths = PAGES)
    paths.each do |path|
      get path
      assert_equal 200, last_response.status, "GET #{path}: #{body[0, 300]}"
    end
  end

  # The paths of every entry the set pages link to.
  def entry_paths
    %w[/scheduled /retries /dead].flat_map do |set|
      get(set) && body.scan(%r{href="(/#{set[1..]}/[^"?]+)"}).flatten
    end
  end

  def self.included(base)
    base.class_eval do
      it "renders set entries scored +Infinity and -Infinity" do
        add_failed(:retry, [
          [Float::INFINITY, failed(name: "Forever")],
          [-Float::INFINITY, failed(name: "Never")]
        ])
        dead = failed(name: "DeadForever")
        add_failed(:dead, [[Float::INFINITY, dead]])
        assert_pages_render
        assert_includes body, "DeadForever"
        get "/retries"
        assert_includes body, "Forever"
        assert_includes body, "Never"
        paths = entry_paths
        assert_equal 3, paths.size
        assert_pages_render(paths)
        post_form "/dead",
          {"do" => "delete", "keys" => ["Infinity-#{jid_of(dead)}"]}
        assert_equal 0, web_store.counts[:dead],
          "an entry scored Infinity can be deleted"
      end

      it "renders jobs whose fields have unexpected types" do
        odd = {
          retries: {"a" => 1},
          attempt: "many",
          created_at: [1],
          failed_at: "yesterday",
          error_backtrace: "one line",
          error_message: {"nested" => true},
          error_class: 7,
          enqueued_at: "now",
          queue: ["q"],
          retry_queue: {}
        }
        add_failed(:dead, [
          [Time.now.to_f, failed(name: "OddJob", **odd)],
          [Time.now.to_f, payload(name: "X", retries: "3", attempt: 2)]
        ])
        web_store.push("default", [payload(enqueued_at: "soon", args: [1])])
        paths = entry_paths
        assert_equal 2, paths.size, body
        assert_pages_render(PAGES + paths + ["/queues/default"])
      end

      it "renders heartbeats whose fields have unexpected types" do
        infos = [
          {
            "rss" => [1],
            "started_at" => {},
            "current_jobs" => nil,
            "heartbeat" => "now",
            "concurrency" => []
          },
          {
            "current_jobs" => [1, 2],
            "pid" => {},
            "hostname" => [],
            "queues" => {"a" => 1}
          },
          {
            "current_jobs" => {
              "1|q" => 1,
              "2|q" => nil,
              "3|q" => {"queue" => [1], "payload" => 5, "run_at" => "soon"}
            }
          },
          {
            "current_jobs" => {
              "4|q" => {"class" => ["Odd"], "args" => {"a" => 1}}
            },
            "rss" => "big",
            "started_at" => 1e300
          }
        ]
        infos.each_with_index do |info, index|
          web_store.beat("odd:#{index}", Jiggler::Payload.dump(info), 60)
        end
        web_store.beat("odd:json", "[1,", 60)
        assert_pages_render
        get "/busy"
        assert_equal 4, body.scan("<td><strong>").size,
          "the four readable processes"
        assert_includes body, "[&quot;Odd&quot;]",
          "a running job with odd fields still has its row"
      end

      it "shows a queue whose name is not UTF-8 on every page, " \
        "in /stats and in /metrics" do
        web_store.push("mail", [payload(queue: "mail")])
        plant_queue(web_store, "bad\xFFq".b, payload(queue: "bad"))
        assert_pages_render
        get "/queues"
        assert_includes body, "bad\uFFFDq"
        get "/stats"
        assert_equal ["bad\uFFFDq", "mail"],
          JSON.parse(body)["queues"].map { |queue| queue["name"] }
        get "/metrics"
        assert_equal 200, last_response.status
        assert_valid_exposition(body)
      end

      it "answers a filter that is not UTF-8" do
        add_failed(:dead, [[Time.now.to_f, failed(name: "Kept")]])
        %w[/dead /retries /scheduled].each do |set|
          get "#{set}?filter=%FF%FE"
          assert_equal 200, last_response.status, body[0, 300]
        end
        get "/dead?filter=Ke%FF"
        assert_equal 200, last_response.status
      end
    end
  end
end

describe "Jiggler::Web with odd data on Redis" do
  include WebSession
  include OddDataCases
end

describe "Jiggler::Web with odd data on SQLite" do
  include WebSession
  include OddDataCases
  include WebSession::OnSQLite

  it "renders a row whose queue is NULL" do
    web_store.push("default", [payload, payload])
    web_store.push("mail", [payload(queue: "mail")])
    SQLite3::Database.new(sqlite_path) do |db|
      db.busy_timeout = 5_000
      db.execute(
        "UPDATE jobs SET queue = NULL WHERE id = (SELECT min(id) FROM jobs)"
      )
    end
    assert_pages_render
    get "/queues"
    assert_includes body, ">mail</a>"
  end
end

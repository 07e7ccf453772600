# frozen_string_literal: true

require "test_helper"
require "jiggler/store/sqlite"
require "support/web_session"

# The key pages and actions of the dashboard on the SQL stores (the other dashboard tests run on Redis); SQLite also
# keeps each job's history.
module WebSQLStoreSpecs
  include WebSession

  def self.included(base)
    base.class_eval do
      it "shows the dashboard, the stats and the queues" do
        web_store.push("mail", [payload(queue: "mail"), payload(queue: "mail")])
        web_store.pause_queue("mail")
        get "/"
        assert_match %r{data-stat="enqueued">2<}, body
        get "/stats"
        assert_equal [{"name" => "mail", "size" => 2, "paused" => true}],
          JSON.parse(body)["queues"].map { |queue|
            queue.slice("name", "size", "paused")
          }
        get "/queues"
        assert_match %r{>mail</a></td>\s*<td class="num">2</td>.*paused}m, body
        web_store.add_to_batch(
          "mail", "DigestJob", [payload(queue: "mail")], Time.now.to_f
        )
        get "/queues"
        assert_match %r{<td>mail</td>\s*<td>DigestJob</td>\s*<td class="num">1</td>},
          body
      end

      it "shows a dead job (with its history where the store keeps one), " \
        "escaped, and retries it" do
        job = failed(name: "MailJob", args: [WebSession::HOSTILE])
        add_failed(:dead, [[1_900_000_000.5, job]])
        get "/dead/1900000000.5-#{jid_of(job)}"
        assert_equal 200, last_response.status
        if Jiggler::Store::Contract.supports?(web_store, :history)
          assert_match %r{<h2>History</h2>.*<td>failed</td>.*<td>dead</td>}m, body
        end
        refute_includes body, "<script>alert"
        post_form "/dead",
          {"do" => "run", "keys" => ["1900000000.5-#{jid_of(job)}"]}
        assert_equal [{"default" => 1}, 0],
          [web_store.queue_sizes, web_store.counts[:dead]]
      end

      it "pauses and resumes a queue, and deletes one of its jobs" do
        doomed, kept = payload, payload
        web_store.push("default", [doomed, kept])
        post_form "/queues/default/pause"
        assert_equal ["default"], web_store.paused_queues
        post_form "/queues/default/delete",
          {"digest" => Jiggler::Web::Entry.digest(doomed)}
        post_form "/queues/default/resume"
        assert_equal [[], [kept]],
          [web_store.paused_queues, web_store.queue_entries("default")]
      end

      it "filters and pages the scheduled jobs" do
        now = Time.now.to_f
        web_store.schedule(
          Array.new(30) do |index|
            [now + index, payload(name: "Report#{index}")]
          end
        )
        get "/scheduled?filter=Report1&page=1"
        assert_equal %w[Report1 Report10 Report11],
          body.scan(/>(Report\d+)</).flatten.first(3)
        get "/scheduled?page=2"
        assert_equal (25..29).map { |index| "Report#{index}" },
          body.scan(/>(Report\d+)</).flatten
      end
    end
  end
end

describe "Jiggler::Web on the SQLite store" do
  include WebSQLStoreSpecs
  include WebSession::OnSQLite
end

describe "Jiggler::Web on the PostgreSQL store" do
  include WebSQLStoreSpecs
  include WebSession::OnPostgres
end

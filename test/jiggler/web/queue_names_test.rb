# frozen_string_literal: true

require "test_helper"
require "cgi"
require "jiggler/store/sqlite"
require "support/web_session"

# Every valid queue name can be managed from the dashboard, on Redis and on SQLite: its links and its forms go to
# paths that name the queue (percent-encoded, never a "." or ".." segment, which browsers resolve away), and posting
# those forms pauses, resumes, deletes from and clears that queue.
module QueueNameCases
  NAMES = [
    "a?b", "..", ".", "%", "/", "a/b", "#x", "a+b", "a%2Fb", "ü-队列", "x&y=z"
  ].freeze

  # The paths of the app's links and form actions in the last page, as a browser would send them.
  def targets(pattern)
    body.scan(/(?:href|action)="([^"]+)"/)
      .flatten
      .map { |url| CGI.unescapeHTML(url) }
      .grep(pattern)
  end

  # Asserts that a path reaches the server as it is written: no segment a browser would resolve away.
  def assert_browser_safe(path)
    segments = path.split("?").first.split("/")
    refute segments.any? { |segment|
      segment.gsub(/%2e/i, ".").match?(/\A\.{1,2}\z/)
    }, "#{path} has a dot segment"
  end

  def post_to(path, params = {})
    assert_browser_safe(path)
    post_form(path, params)
    assert_equal 303, last_response.status, "POST #{path}: #{body[0, 200]}"
  end

  def self.included(base)
    base.class_eval do
      it "links to each queue's page " \
        "and posts its forms to paths that name it" do
        NAMES.each do |name|
          jobs = [
            payload(queue: name, args: ["first"]),
            payload(queue: name, args: ["second"])
          ]
          web_store.push(name, jobs)
          get "/queues"
          page = targets(%r{\A/queues/[^/]+\z}).find do |path|
            get(path) && body.include?("<h1>Queue #{CGI.escapeHTML(name)} ")
          end
          assert page, "no link on /queues opens the page of #{name.inspect}"
          assert_browser_safe(page)

          post_to(targets(%r{/pause\z}).first, {"from" => "queue"})
          assert_equal page, last_response.location
          assert_includes web_store.paused_queues, name
          get page
          post_to(targets(%r{/resume\z}).first)
          refute_includes web_store.paused_queues, name
          get page
          post_to(
            targets(%r{/delete\z}).first,
            {"digest" => body[/name="digest" value="(\h+)"/, 1]}
          )
          assert_equal [jobs.last], web_store.queue_entries(name), name
          get page
          post_to(targets(%r{/clear\z}).first)
          assert_equal 0, web_store.queue_sizes.fetch(name, 0), name
        end
      end
    end
  end
end

describe "queue names in the dashboard on Redis" do
  include WebSession
  include QueueNameCases
end

describe "queue names in the dashboard on SQLite" do
  include WebSession
  include QueueNameCases
  include WebSession::OnSQLite
end

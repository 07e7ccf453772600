# frozen_string_literal: true

require "test_helper"
require "json"
require "tmpdir"
require "fileutils"
require "support/web_session"

module RecurringWebTest
  SEEN = []

  # A client middleware that records each enqueue and tags the job.
  class Tag
    def call(job, queue)
      SEEN << [job["name"], queue]
      job["tag"] = "tagged"
      yield
    end
  end
end

# The recurring tasks page: what servers recorded, with last and next run, run now, disable and enable.
describe "Jiggler::Web recurring page" do
  include WebSession

  def save(name, settings)
    web_store.save_recurring(
      name => JSON.generate(
        {
          "class" => "TickJob",
          "job" => {"queue" => "ticks", "retries" => 0}
        }.merge(settings)
      )
    )
  end

  it "lists each task with its job, schedule, last and next run" do
    save(
      "hourly",
      {"schedule" => "0 * * * *", "args" => [1], "description" => "tidy up"}
    )
    web_store.enqueue_recurring(
      "hourly", 100, "ticks", payload, now: Time.now.to_f - 30
    )
    get "/recurring"
    assert_equal 200, last_response.status
    row = body[%r{<tr data-task="hourly">.*?</tr>}m]
    assert_includes row, "tidy up"
    assert_includes row, "TickJob"
    assert_includes row, "0 * * * *"
    assert_match(/\d+ s ago/, row)
    assert_match(/in \d+/, row)
    assert_includes row, "enabled"
  end

  it "runs a task now on its queue, marked as a run by hand" do
    save("hourly", {"schedule" => "0 * * * *", "args" => [7]})
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_redirected_to "/recurring"
    job = Jiggler::Payload.load(web_store.queue_entries("ticks").first)
    assert_equal ["TickJob", [7], 0, {"task" => "hourly", "tick" => nil}],
      job.values_at("name", "args", "retries", "recurring")
  end

  it "runs a task now through the client middleware, as its ticks are" do
    RecurringWebTest::SEEN.clear
    Jiggler.configure do |config|
      config.client_middleware { |chain| chain.add(RecurringWebTest::Tag) }
    end
    save("hourly", {"schedule" => "0 * * * *", "args" => [7]})
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_redirected_to "/recurring"
    assert_equal [["TickJob", "ticks"]], RecurringWebTest::SEEN
    assert_equal "tagged",
      Jiggler::Payload.load(web_store.queue_entries("ticks").first)["tag"]
  end

  # A dashboard mounted with a chain of its own uses it rather than Jiggler.config's.
  it "runs a task now through the client middleware the app was built with" do
    RecurringWebTest::SEEN.clear
    chain = Jiggler::Middleware::Chain.new
    chain.add(RecurringWebTest::Tag)
    @app = Rack::Lint.new(
      Jiggler::Web.new(store: web_store, client_middleware: chain)
    )
    save("hourly", {"schedule" => "0 * * * *", "args" => [7]})
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_redirected_to "/recurring"
    assert_equal [["TickJob", "ticks"]], RecurringWebTest::SEEN
    assert_predicate Jiggler.config.client_middleware, :empty?
  end

  it "runs a task now with the limits and the unique lock the server stored, " \
    "and says so when the lock is taken" do
    limits = {
      "concurrency" => {"key" => "TickJob:acme", "limit" => 1, "ttl" => 60}
    }
    save("hourly", {
      "schedule" => "0 * * * *",
      "args" => ["acme"],
      "job" => {
        "queue" => "ticks",
        "retries" => 0,
        "limits" => limits,
        "unique" => {
          "lock" => "TickJob:acme",
          "until" => "finished",
          "ttl" => 60
        }
      }
    })
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_redirected_to "/recurring"
    job = Jiggler::Payload.load(web_store.queue_entries("ticks").first)
    assert_equal [limits, {"lock" => "TickJob:acme", "until" => "finished"}],
      job.values_at("limits", "unique")
    assert_equal job["jid"], web_store.lock_holder("TickJob:acme")
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_equal 409, last_response.status
    assert_includes body,
      "not enqueued: this task's job is unique and one is still " \
      "queued or running (lock TickJob:acme)"
    assert_equal({"ticks" => 1}, web_store.queue_sizes)
    assert web_store.unlock("TickJob:acme", job["jid"])
    post_form "/recurring/hourly/run", from: "/recurring"
    assert_redirected_to "/recurring"
    assert_equal({"ticks" => 2}, web_store.queue_sizes)
  end

  it "disables and enables a task for every server" do
    save("hourly", {"schedule" => "0 * * * *"})
    post_form "/recurring/hourly/disable", from: "/recurring"
    assert_redirected_to "/recurring"
    refute web_store.enqueue_recurring("hourly", 100, "ticks", payload)
    get "/recurring"
    assert_includes body, "disabled"
    post_form "/recurring/hourly/enable", from: "/recurring"
    assert web_store.enqueue_recurring("hourly", 100, "ticks", payload)
  end

  it "answers 404 for an unknown task and refuses a POST without a token" do
    post_form "/recurring/nope/run", from: "/recurring"
    assert_equal 404, last_response.status
    save("hourly", {"schedule" => "0 * * * *"})
    post "/recurring/hourly/run"
    assert_equal 403, last_response.status
    assert_empty web_store.queue_sizes
  end

  it "escapes hostile names and arguments, " \
    "and shows unreadable settings as such" do
    save(
      WebSession::HOSTILE,
      {"schedule" => "0 * * * *", "args" => [WebSession::HOSTILE]}
    )
    web_store.save_recurring("broken" => "{not json")
    get "/recurring"
    assert_equal 200, last_response.status
    refute_includes body, WebSession::HOSTILE
    assert_includes body, "unreadable settings"
  end
end

# Thousands of tasks: the page shows 50 at a time, by name, and runs or disables one without reading the others.
describe "Jiggler::Web recurring page with many tasks" do
  include WebSession

  {"redis" => nil, "sqlite" => "jobs.sqlite3"}.each do |store_name, file|
    it "shows 50 tasks a page with links to the others, " \
      "and acts on one by name, on #{store_name}" do
      dir = Dir.mktmpdir("jiggler-web-recurring")
      if file
        Jiggler.configure do |config|
          config[:redis_url] = nil
          config[:sqlite_path] = File.join(dir, file)
        end
      end
      definition = JSON.generate({
        "class" => "TickJob",
        "schedule" => "0 3 * * *",
        "job" => {"queue" => "ticks", "retries" => 0}
      })
      web_store.save_recurring(
        Array.new(2_000) do |index|
          [format("task_%04d", index), definition]
        end.to_h
      )
      get "/recurring", page: 2
      assert_equal 200, last_response.status
      assert_equal (50...100).map { |index| format("task_%04d", index) },
        body.scan(/<tr data-task="([^"]+)">/).flatten
      assert_includes body, "?page=1"
      assert_includes body, "?page=3"
      assert_equal "2000", body[/data-total>(\d+)</, 1]
      post_form "/recurring/task_1999/disable", from: "/recurring?page=40"
      assert_redirected_to "/recurring"
      refute web_store.enqueue_recurring("task_1999", 100, "ticks", payload)
    ensure
      web_store.close
      FileUtils.rm_rf(dir)
    end
  end
end

describe "Jiggler::Web queues page with concurrency limits" do
  include WebSession

  it "shows the jobs waiting for a slot, per queue, " \
    "also when the queue is otherwise empty" do
    web_store.push(
      "exports", [payload(queue: "exports"), payload(queue: "exports")]
    )
    web_store.fetch("proc-1", ["exports"], limit: 2).each do |job|
      web_store.acquire_slot(
        "proc-1",
        job,
        key: "k",
        limit: 1,
        jid: jid_of(job.payload),
        ttl: 60,
        reliable: true
      )
    end
    get "/queues"
    assert_equal "1", body[
      %r{<tr data-queue="exports">.*?<td class="num" data-waiting>(\d+)</td>}m,
      1
    ]
    get "/stats"
    assert_equal [["exports", 0, 1]],
      JSON.parse(body)["queues"].map { |queue|
        queue.values_at("name", "size", "waiting")
      }
  end
end

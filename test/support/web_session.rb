# frozen_string_literal: true

require "rack/test"
require "rack/lint"
require "securerandom"
require "tmpdir"
require "fileutils"
require "jiggler/web"

# Rack::Test against the dashboard wrapped in Rack::Lint, with helpers to build jobs in the store and to post forms
# with the CSRF token of a page the app rendered (the cookie jar keeps the cookie that goes with it).
module WebSession
  include Rack::Test::Methods

  HOSTILE = "<script>alert(1)</script>"

  # The dashboard under test; a test may build its own as @app.
  def app = @app || Rack::Lint.new(Jiggler::Web.new(store: web_store))

  # The store the app shows; the Redis store of the test's namespace unless a test says otherwise.
  def web_store = Jiggler.store

  # A job payload as the client writes it.
  def payload(name: "RecordJob", args: [1], queue: "default", **extra)
    data = {
      "jid" => SecureRandom.hex(12),
      "name" => name,
      "args" => args,
      "queue" => queue,
      "retries" => 3,
      "created_at" => Time.now.to_f,
      "enqueued_at" => Time.now.to_f
    }
    Jiggler::Payload.dump(data.merge(extra.transform_keys(&:to_s)))
  end

  # A failed job's payload, as the server records it.
  def failed(message: "boom", **extra)
    payload(
      error_class: "RuntimeError",
      error_message: message,
      error_backtrace: ["app/jobs/x.rb:3:in `perform'"],
      attempt: 1,
      failed_at: Time.now.to_f,
      **extra
    )
  end

  # Puts payloads in the retry or dead set with the given scores.
  def add_failed(set, entries)
    failures = entries.map do |score, job|
      Jiggler::Store::Failed.new(
        fetched: Jiggler::Store::Fetched.new(nil, "default", nil),
        set: set.to_sym,
        at: score,
        payload: job
      )
    end
    web_store.fail(
      "web-test", failures, reliable: false, dead_cutoff: 0.0, dead_max: 1_000
    )
  end

  def jid_of(job) = Jiggler::Payload.load(job)["jid"]

  # The CSRF token of a page (a fresh GET gives the cookie too).
  def csrf_token(path = "/")
    get(path)
    token = last_response.body[
      /name="(?:authenticity_token" value|csrf-token" content)="([^"]+)"/, 1
    ]
    assert token, "no CSRF token on #{path}"
    token
  end

  # Posts a form the way the browser would after loading `from`.
  def post_form(path, params = {}, from: "/")
    post(
      path,
      params.merge("authenticity_token" => csrf_token(from)),
      "HTTP_SEC_FETCH_SITE" => "same-origin"
    )
  end

  def assert_redirected_to(path)
    assert_equal 303, last_response.status, last_response.body
    assert_equal path, last_response.location
  end

  def body = last_response.body

  # The dashboard on an SQLite file of the test's own instead of the suite's Redis.
  module OnSQLite
    def setup
      super
      @web_dir = Dir.mktmpdir("jiggler-web")
    end

    def teardown
      @sqlite&.close
      FileUtils.rm_rf(@web_dir)
      super
    end

    def sqlite_path = File.join(@web_dir, "jobs.sqlite3")

    def web_store = @sqlite ||= Jiggler::Store::SQLite.new(path: sqlite_path)
  end

  # The dashboard on the suite's PostgreSQL, in a schema named after the test's namespace.
  module OnPostgres
    def setup
      super
      require "support/postgres_server"
    end

    def teardown
      @postgres&.close
      PostgresServer.instance.drop_schema(@namespace)
      super
    end

    def web_store
      @postgres ||= Jiggler::Store::Postgres.new(
        url: PostgresServer.instance.url, namespace: @namespace
      )
    end
  end
end

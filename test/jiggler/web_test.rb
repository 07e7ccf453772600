# frozen_string_literal: true

require "test_helper"
require "json"
require "open3"
require "support/web_session"

describe Jiggler::Web do
  include WebSession

  describe "pages" do
    it "shows the dashboard with the counters and the queues" do
      web_store.push("default", [payload, payload])
      web_store.schedule([[Time.now.to_f + 60, payload]])
      get "/"
      assert_equal [200, "text/html; charset=utf-8"],
        [last_response.status, last_response.content_type]
      assert_match %r{data-stat="enqueued">2<}, body
      assert_match %r{data-stat="scheduled">1<}, body
      assert_match %r{<a href="/queues/default">default</a></td><td class="num">2</td>}, body
    end

    it "serves the counters, queues and latency as JSON" do
      web_store.push(
        "mail",
        [payload(queue: "mail", enqueued_at: Time.now.to_f - 30)]
      )
      web_store.pause_queue("mail")
      get "/stats"
      assert_equal "application/json; charset=utf-8", last_response.content_type
      stats = JSON.parse(body)
      assert_equal [1, 0, 0], stats.values_at("enqueued", "processed", "busy")
      assert_equal [["mail", 1, true]], stats["queues"].map { |queue|
        queue.values_at("name", "size", "paused")
      }
      assert_in_delta 30, stats["queues"].first["latency"], 5
    end

    it "shows busy processes with heartbeat, memory, concurrency, queues " \
      "and running jobs" do
      running = {
        "7|mail" => {
          "queue" => "mail",
          "class" => "MailJob",
          "jid" => "ab" * 12,
          "args" => '["hi"]',
          "run_at" => Time.now.to_f
        }
      }
      info = {
        "heartbeat" => Time.now.to_f,
        "rss" => 51_200,
        "concurrency" => "10",
        "queues" => "mail,default",
        "hostname" => "box",
        "pid" => "42",
        "started_at" => Time.now.to_i.to_s,
        "current_jobs" => running
      }
      web_store.beat("box:42", Jiggler::Payload.dump(info), 60)
      get "/busy"
      assert_equal 200, last_response.status
      [
        "box:42",
        "50.0 MB",
        "1 / 10",
        "mail,default",
        "MailJob",
        "[&quot;hi&quot;]",
        "ago"
      ].each { |text| assert_includes body, text }
    end

    it "lists queues with their size, latency and state, " \
      "paused empty ones included" do
      web_store.push(
        "mail",
        [payload(queue: "mail", enqueued_at: Time.now.to_f - 90)]
      )
      web_store.pause_queue("idle")
      get "/queues"
      assert_match %r{>mail</a></td>\s*<td class="num">1</td>\s*<td class="num">9\d s</td>\s*<td>running}, body
      assert_match %r{>idle</a></td>\s*<td class="num">0</td>\s*<td class="num">0.0 s</td>\s*<td>paused}, body
    end

    it "lists the batch items waiting, by queue and class" do
      web_store.add_to_batch(
        "mail",
        "DigestJob",
        [payload(queue: "mail"), payload(queue: "mail")],
        Time.now.to_f - 30
      )
      get "/queues"
      assert_match %r{<td>mail</td>\s*<td>DigestJob</td>\s*<td class="num">2</td>\s*<td class="num">3\d s</td>}, body
      get "/stats"
      assert_equal [["mail", "DigestJob", 2]],
        JSON.parse(body)["batches"].map { |batch|
          batch.values_at("queue", "class", "size")
        }
    end

    it "pages through a queue's jobs, next to run first" do
      jobs = Array.new(30) { |index| payload(args: [index]) }
      web_store.push("default", jobs)
      get "/queues/default"
      assert_equal 25, body.scan("<code>[").size
      assert_includes body, "<code>[0]</code>"
      assert_includes body, %(href="/queues/default?page=2")
      get "/queues/default?page=2"
      assert_equal (25..29).map { |index| "<code>[#{index}]</code>" },
        body.scan(/<code>\[\d+\]<\/code>/)
    end

    it "lists scheduled jobs soonest first and dead jobs latest first" do
      now = Time.now.to_f
      web_store.schedule([
        [now + 120, payload(name: "Later")],
        [now + 60, payload(name: "Sooner")]
      ])
      add_failed(:dead, [
        [now - 60, failed(name: "DiedFirst")],
        [now - 10, failed(name: "DiedLast")]
      ])
      get "/scheduled"
      assert_operator body.index("Sooner"), :<, body.index("Later")
      get "/dead"
      assert_operator body.index("DiedLast"), :<, body.index("DiedFirst")
    end

    it "filters retries by class name or jid" do
      wanted, other = failed(name: "MailJob"), failed(name: "ReportJob")
      add_failed(:retry, [
        [Time.now.to_f + 60, wanted],
        [Time.now.to_f + 61, other]
      ])
      get "/retries?filter=Mail"
      assert_includes body, "MailJob"
      refute_includes body, "ReportJob"
      get "/retries?filter=#{jid_of(other)[4, 10]}"
      assert_equal [true, false],
        [body.include?("ReportJob"), body.include?("MailJob")]
    end

    it "shows a job with its payload, error and backtrace" do
      job = failed(name: "MailJob", args: [7], message: "SMTP down")
      add_failed(:retry, [[1_900_000_000.25, job]])
      get "/retries/1900000000.25-#{jid_of(job)}"
      assert_equal 200, last_response.status
      [
        "MailJob",
        "SMTP down",
        "app/jobs/x.rb:3:in `perform'",
        "<code>[7]</code>",
        jid_of(job)
      ].each do |text|
        assert_includes body, Rack::Utils.escape_html(text)
          .gsub("&#x60;", "`")
          .then { |html| body.include?(html) ? html : text }
      end
      assert_includes body, "<h2>Payload</h2>"
      refute_includes body, "<h2>History</h2>" # Redis keeps no history
    end

    it "answers 404 for unknown paths, sets and jobs, " \
      "and 405 for a wrong method" do
      [
        "/nope",
        "/queues/a/b/c",
        "/graveyard",
        "/dead/1.0-abc",
        "/dead/not-a-key",
        "/assets/app.js"
      ].each do |path|
        get path
        assert_equal 404, last_response.status, path
      end
      get "/queues/default/pause"
      assert_equal [405, "POST"], [last_response.status, last_response["allow"]]
    end

    it "reads out-of-range and malformed page numbers as the nearest page" do
      web_store.push("default", [payload(args: ["only"])])
      [
        "/queues/default?page=0",
        "/queues/default?page=abc",
        "/queues/default?page[]=2"
      ].each do |path|
        get path
        assert_includes body, "[&quot;only&quot;]", path
      end
      get "/queues/default?page=#{"9" * 30}"
      assert_equal [200, false], [last_response.status, body.include?("only")]
      get "/dead?page=#{"9" * 30}"
      assert_equal 200, last_response.status
    end

    it "answers HEAD with headers only" do
      head "/"
      assert_equal [200, ""], [last_response.status, body]
    end

    it "serves its CSS and JavaScript with their types" do
      get "/"
      css, js = body.scan(%r{(?:href|src)="(/assets/[^"]+)"}).flatten
      get css
      assert_equal ["text/css; charset=utf-8", "nosniff"],
        [last_response.content_type, last_response["x-content-type-options"]]
      get js
      assert_equal "text/javascript; charset=utf-8", last_response.content_type
      assert_includes body, "visibilitychange"
    end

    describe "mounted below a path" do
      def app = Rack::URLMap.new("/admin/jiggler" => super)

      it "prefixes links, redirects and the cookie's path " \
        "with the mount path" do
        web_store.push("mail", [payload(queue: "mail")])
        get "/admin/jiggler/queues"
        assert_includes body, %(href="/admin/jiggler/queues/mail")
        assert_includes last_response["set-cookie"], "path=/admin/jiggler/"
        post_form "/admin/jiggler/queues/mail/pause", {},
          from: "/admin/jiggler/queues"
        assert_redirected_to "/admin/jiggler/queues"
        get "/admin/jiggler"
        assert_equal 200, last_response.status
      end
    end

    it "uses Jiggler.store when no store is given" do
      web_store.push("from-default", [payload])
      status, _, body =
        Jiggler::Web.new.call(Rack::MockRequest.env_for("/queues"))
      assert_equal 200, status
      assert_includes body.join, "from-default"
    end

    it "answers 503 when the store cannot be reached" do
      unreachable = Jiggler::Store::Redis.new(
        pool: RedisClient.new(url: "redis://127.0.0.1:1/0")
      )
      status, headers, body = Jiggler::Web.new(store: unreachable)
        .call(Rack::MockRequest.env_for("/"))
      assert_equal [503, "text/plain; charset=utf-8"],
        [status, headers["content-type"]]
      assert_equal ["The job store cannot be reached."], body
    end
  end

  describe "security" do
    it "escapes hostile job arguments, class names and errors on every page" do
      hostile = payload(
        name: "Evil#{WebSession::HOSTILE}",
        args: [WebSession::HOSTILE],
        queue: WebSession::HOSTILE
      )
      web_store.push(WebSession::HOSTILE, [hostile])
      web_store.schedule([[Time.now.to_f + 60, hostile]])
      job = failed(
        name: "Evil#{WebSession::HOSTILE}",
        args: [WebSession::HOSTILE],
        message: WebSession::HOSTILE
      )
      add_failed(:dead, [[1_900_000_000.5, job]])
      [
        "/",
        "/queues",
        "/queues/" \
          "#{Rack::Utils.escape_path(WebSession::HOSTILE).gsub("/", "%2F")}",
        "/scheduled",
        "/dead",
        "/dead/1900000000.5-#{jid_of(job)}"
      ].each do |path|
        get path
        assert_equal 200, last_response.status, path
        refute_includes body, "<script>alert", path
        assert_includes body, "&lt;script&gt;alert(1)&lt;/script&gt;", path
      end
    end

    it "refuses a POST without a CSRF token, with 403, and changes nothing" do
      get "/queues" # the cookie alone is not enough
      post "/queues/default/pause"
      assert_equal 403, last_response.status
      assert_match(/CSRF/, body)
      assert_empty web_store.paused_queues
    end

    it "refuses a forged token, a token without its cookie, " \
      "and a cross-site POST" do
      token = csrf_token
      post "/queues/default/pause", "authenticity_token" => token.reverse
      assert_equal 403, last_response.status
      post "/queues/default/pause", {"authenticity_token" => token},
        "HTTP_SEC_FETCH_SITE" => "cross-site"
      assert_equal 403, last_response.status
      clear_cookies
      post "/queues/default/pause", "authenticity_token" => token
      assert_equal [403, []], [last_response.status, web_store.paused_queues]
    end

    it "refuses a POST whose body is not a form, even with the cookie" do
      token = csrf_token
      post "/queues/default/pause",
        JSON.generate("authenticity_token" => token),
        "CONTENT_TYPE" => "application/json"
      assert_equal [403, []], [last_response.status, web_store.paused_queues]
    end

    it "answers 413 to a form over rack's size limit and 400 to one too deep " \
      "or with too many fields" do
      token = csrf_token
      many = Array.new(5_000) { |index| "f#{index}=1" }.join("&")
      {
        "a=#{"x" * (5 * 1024 * 1024)}" => 413,
        "a#{"[b]" * 200}=1" => 400,
        many => 400
      }.each do |form, status|
        post "/queues/default/pause", "authenticity_token=#{token}&#{form}",
          "CONTENT_TYPE" => "application/x-www-form-urlencoded",
          "HTTP_SEC_FETCH_SITE" => "same-origin"
        assert_equal status, last_response.status, last_response.body[0, 200]
        assert_equal "nosniff", last_response.headers["x-content-type-options"]
      end
      assert_empty web_store.paused_queues
    end

    it "accepts its own token, which differs on every page" do
      first, second = csrf_token, csrf_token
      refute_equal first, second
      post "/queues/default/pause", {"authenticity_token" => first},
        "HTTP_SEC_FETCH_SITE" => "same-origin"
      assert_redirected_to "/queues"
    end

    it "sets the CSRF cookie HttpOnly and SameSite=Strict, once" do
      get "/"
      assert_match(
        /\Ajiggler_csrf=[\w-]+=*; path=\/; httponly; samesite=strict\z/,
        last_response["set-cookie"]
      )
      get "/"
      assert_nil last_response["set-cookie"]
    end

    it "names the CSRF cookie __Host- over HTTPS, secure and for path /, " \
      "and accepts the forms it goes with" do
      get "https://example.org/queues"
      assert_match(
        /\A__Host-jiggler_csrf=[\w-]+=*; path=\/; httponly; samesite=strict; secure\z/,
        last_response["set-cookie"]
      )
      token = body[/name="csrf-token" content="([^"]+)"/, 1]
      post "https://example.org/queues/mail/pause",
        {"authenticity_token" => token},
        "HTTP_SEC_FETCH_SITE" => "same-origin"
      assert_equal [303, ["mail"]],
        [last_response.status, web_store.paused_queues]
    end

    it "sends a CSP whose nonce is on the script tag, nosniff and no caching" do
      get "/"
      nonce = last_response["content-security-policy"][/'nonce-([^']+)'/, 1]
      assert_includes body, %(nonce="#{nonce}")
      assert_includes last_response["content-security-policy"],
        "default-src 'none'"
      assert_equal ["nosniff", "private, no-store", "DENY"],
        last_response.headers.values_at(
          "x-content-type-options",
          "cache-control",
          "x-frame-options"
        )
      refute_match(/<script>|style="/, body, "no inline script or style")
    end

    it "does not load rack or the web app with require 'jiggler'" do
      output, status = Open3.capture2e(
        RbConfig.ruby,
        "-Ilib",
        "-e",
        'require "jiggler"; exit((defined?(Rack) || defined?(Jiggler::Web)) ? 1 : 0)',
        chdir: File.expand_path("../..", __dir__)
      )
      assert status.success?,
        "require \"jiggler\" loaded Rack or Jiggler::Web\n#{output}"
    end
  end

  describe "queue actions" do
    it "pauses and resumes a queue, back to the page it was sent from" do
      post_form "/queues/mail/pause", {"from" => "queue"}
      assert_redirected_to "/queues/mail"
      assert_equal ["mail"], web_store.paused_queues
      get "/queues/mail"
      assert_includes body, %(<span class="badge">paused</span>)
      post_form "/queues/mail/resume"
      assert_redirected_to "/queues"
      assert_empty web_store.paused_queues
    end

    it "clears a queue" do
      web_store.push("mail", [payload(queue: "mail")])
      post_form "/queues/mail/clear"
      assert_redirected_to "/queues"
      assert_empty web_store.queue_sizes
    end

    it "deletes one job of a queue, named in its form by a digest " \
      "instead of its payload" do
      doomed, kept = payload(args: ["x" * 100_000]), payload
      web_store.push("default", [doomed, kept])
      get "/queues/default"
      assert_operator body.bytesize, :<, 20_000,
        "the page embeds no whole payload"
      digest = body[/name="digest" value="(\h{64})"/, 1]
      post_form "/queues/default/delete", {"digest" => digest, "page" => "1"}
      assert_redirected_to "/queues/default?page=1"
      assert_equal [kept], web_store.queue_entries("default")
    end

    it "deletes a job that moved to the page before since its page was shown" do
      jobs = Array.new(30) { |index| payload(args: [index]) }
      web_store.push("default", jobs)
      digest = Jiggler::Web::Entry.digest(jobs[27])
      # ran
      3.times do
        web_store.delete_queue_entry(
          "default",
          web_store.queue_entries("default", limit: 1).first
        )
      end
      post_form "/queues/default/delete", {"digest" => digest, "page" => "2"}
      refute_includes web_store.queue_entries("default", limit: 100), jobs[27]
      assert_equal 26, web_store.queue_sizes["default"]
    end
  end

  describe "set actions" do
    def keys(set)
      web_store.set_entries(set).map { |job, score| "#{score}-#{jid_of(job)}" }
    end

    it "retries selected dead jobs now, on their queue" do
      jobs = [failed(queue: "mail"), failed, failed]
      add_failed(
        :dead,
        jobs.each_with_index.map { |job, index| [1_000.0 + index, job] }
      )
      post_form "/dead", {"do" => "run", "keys" => keys(:dead).first(2)}
      assert_redirected_to "/dead"
      assert_equal [{"default" => 1, "mail" => 1}, 1],
        [web_store.queue_sizes, web_store.counts[:dead]]
    end

    it "runs a scheduled job now from its page" do
      job = payload(queue: "mail")
      web_store.schedule([[Time.now.to_f + 3_600, job]])
      key = keys(:scheduled).first
      get "/scheduled/#{key}"
      assert_includes body, %(name="keys[]" value="#{key}")
      post_form "/scheduled", {"do" => "run", "keys" => [key]},
        from: "/scheduled/#{key}"
      assert_equal [[jid_of(job)], 0], [
        web_store.queue_entries("mail").map { |entry| jid_of(entry) },
        web_store.counts[:scheduled]
      ]
    end

    it "kills retries to the dead set and deletes others" do
      add_failed(:retry, [
        [1_000.0, failed],
        [1_001.0, failed],
        [1_002.0, failed]
      ])
      killed, deleted, kept = keys(:retry)
      post_form "/retries", {"do" => "kill", "keys" => [killed]}
      post_form "/retries", {"do" => "delete", "keys" => [deleted]}
      assert_equal [[kept], 1], [keys(:retry), web_store.counts[:dead]]
    end

    it "retries or deletes every job of a set" do
      add_failed(:retry, Array.new(150) { |index| [1_000.0 + index, failed] })
      add_failed(:dead, [[1_000.0, failed]])
      post_form "/retries/all", {"do" => "run"}
      post_form "/dead/all", {"do" => "delete"}
      assert_equal [{"default" => 150}, 0, 0], [
        web_store.queue_sizes,
        web_store.counts[:retry],
        web_store.counts[:dead]
      ]
    end

    it "refuses unknown actions and killing dead jobs" do
      add_failed(:dead, [[1_000.0, failed]])
      post_form "/dead", {"do" => "kill", "keys" => keys(:dead)}
      assert_equal 400, last_response.status
      post_form "/dead", {"do" => "explode", "keys" => keys(:dead)}
      assert_equal [400, 1], [last_response.status, web_store.counts[:dead]]
      post_form "/graveyard", {"do" => "run"}
      assert_equal 404, last_response.status
    end

    it "ignores keys that are not keys, or not there" do
      add_failed(:dead, [[1_000.0, failed]])
      post_form "/dead", {
        "do" => "delete",
        "keys" => ["junk", "1000.0-#{"0" * 24}", {"a" => "b"}]
      }
      assert_redirected_to "/dead"
      assert_equal 1, web_store.counts[:dead]
    end
  end
end

# frozen_string_literal: true

require "minitest/autorun"
require "rack/mock"
require "jiggler/web/csrf"

describe Jiggler::Web::CSRF do
  def request(cookie: nil, token: nil)
    env = Rack::MockRequest.env_for(
      "/",
      method: "POST",
      params: token ? {"authenticity_token" => token} : {}
    )
    env["HTTP_COOKIE"] = "jiggler_csrf=#{cookie}" if cookie
    Rack::Request.new(env)
  end

  # A new secret's cookie value and a token for it.
  def issue
    csrf = Jiggler::Web::CSRF.new(request)
    token = csrf.token
    [csrf.cookie("/")[/\Ajiggler_csrf=([^;]+)/, 1], token]
  end

  it "accepts a token made for the cookie's secret, " \
    "masked differently each time" do
    cookie, token = issue
    other = Jiggler::Web::CSRF.new(request(cookie: cookie)).token
    refute_equal token, other
    assert Jiggler::Web::CSRF.new(request(cookie: cookie, token: token)).valid?
    assert Jiggler::Web::CSRF.new(request(cookie: cookie, token: other)).valid?
  end

  it "refuses a missing, altered or foreign token, and a missing cookie" do
    cookie, token = issue
    foreign_cookie, foreign_token = issue
    refute Jiggler::Web::CSRF.new(request(cookie: cookie)).valid?
    refute Jiggler::Web::CSRF.new(
      request(cookie: cookie, token: token.tr("A-Za-z", "B-ZAb-za"))
    ).valid?
    refute Jiggler::Web::CSRF.new(
      request(cookie: cookie, token: foreign_token)
    ).valid?
    refute Jiggler::Web::CSRF.new(
      request(cookie: foreign_cookie, token: token)
    ).valid?
    refute Jiggler::Web::CSRF.new(request(token: token)).valid?
  end

  it "refuses malformed cookies and tokens without raising" do
    refute Jiggler::Web::CSRF.new(request(cookie: "%%%", token: "!!")).valid?
    refute Jiggler::Web::CSRF.new(request(cookie: "YWJj", token: "YWJj")).valid?
  end

  it "names the cookie with the __Host- prefix over HTTPS: " \
    "secure, for path /, and read back under that name" do
    https = ->(cookie: nil, token: nil) do
      env = Rack::MockRequest.env_for(
        "https://example.test/jiggler/",
        method: "POST",
        params: token ? {"authenticity_token" => token} : {}
      )
      env["HTTP_COOKIE"] = cookie if cookie
      Rack::Request.new(env)
    end
    csrf = Jiggler::Web::CSRF.new(https.call)
    token = csrf.token
    cookie = csrf.cookie("/jiggler/")
    assert_match(
      /\A__Host-jiggler_csrf=[\w-]+=*; path=\/; httponly; samesite=strict; secure\z/,
      cookie
    )
    pair = cookie.split(";").first
    assert Jiggler::Web::CSRF.new(https.call(cookie: pair, token: token)).valid?
    refute Jiggler::Web::CSRF.new(
      https.call(cookie: pair.delete_prefix("__Host-"), token: token)
    ).valid?, "not the plain cookie"
    assert_match(
      /\Ajiggler_csrf=.*; path=\/jiggler\/; httponly; samesite=strict\z/,
      Jiggler::Web::CSRF.new(request).tap(&:token).cookie("/jiggler/")
    )
  end

  it "sets a cookie only when it made a new secret" do
    cookie, _ = issue
    existing = Jiggler::Web::CSRF.new(request(cookie: cookie))
    existing.token
    assert_nil existing.cookie("/")
  end
end

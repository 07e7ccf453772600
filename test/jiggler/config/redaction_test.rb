# frozen_string_literal: true

require "test_helper"

# Every way a Redis URL is echoed (the setting's refusal, REDIS_URL's, redis-client's, a Sentinel URL's, and the
# client's exception) shows it through Config::Redaction, which never shows a password, whatever the value's form.
describe "Jiggler::Config::Redaction" do
  def secret = "s3cret"

  # Malformed values, each with what may be shown of it.
  def malformed = {
    "redis:/:s3cret@host:6379" =>
      %(a malformed URL (scheme "redis", host "host:6379"; the rest not shown)),
    "redis//:s3cret@host:6379" =>
      %(a malformed URL (scheme "redis", host "host:6379"; the rest not shown)),
    ":s3cret@host:6379" =>
      %(a malformed URL (host "host:6379"; the rest not shown)),
    "redis://user:s3cret @host" =>
      %(a malformed URL (scheme "redis", host "host"; the rest not shown)),
    "redis://user:s3 cret@host/0" =>
      %(a malformed URL (scheme "redis", host "host"; the rest not shown)),
    " redis://:s3cret@host" =>
      %(a malformed URL (scheme "redis", host "host"; the rest not shown)),
    "redis://:s3cret@[::1" =>
      %(a malformed URL (scheme "redis"; the rest not shown)),
    "redis://:s3cret\t@host" =>
      %(a malformed URL (scheme "redis", host "host"; the rest not shown)),
    "s3cret" => "a malformed URL (not shown: it may hold a password)",
    "redis:s3cret" => "a malformed URL (not shown: it may hold a password)",
    "rediss://u:s3cret@h:1/0?x=y z" =>
      %(a malformed URL (scheme "rediss", host "h:1"; the rest not shown)),
    "redis://:s3c@ret@host/0" =>
      %(a malformed URL (scheme "redis", host "host"; the rest not shown))
  }

  def with_env(values)
    saved = values.keys.to_h { |name| [name, ENV[name]] }
    values.each { |name, value| ENV[name] = value }
    yield
  ensure
    saved.each { |name, value| ENV[name] = value }
  end

  it "shows a malformed value only by its scheme and host, " \
    "else by a placeholder" do
    malformed.each do |url, shown|
      assert_equal shown, Jiggler::Config::Redaction.url(url), url.inspect
    end
  end

  it "shows a well-formed URL without its credentials or query values" do
    {
      "redis://user:s3cret@host:6379/0" => %("redis://***@host:6379/0"),
      "redis://:s3c%40ret@host/0" => %("redis://***@host/0"),
      "redis+sentinel://:s3cret@h1:1,h2:2/m?sentinel_password=s3cret" =>
        %("redis+sentinel://***@h1:1,h2:2/m?sentinel_password=***"),
      "redis://host:6379/1" => %("redis://host:6379/1")
    }.each do |url, shown|
      assert_equal shown, Jiggler::Config::Redaction.url(url)
    end
  end

  it "refuses every malformed REDIS_URL, and redis_url, without the password" do
    malformed.each_key do |url|
      with_env("REDIS_URL" => url) do
        error = assert_raises(Jiggler::Config::InvalidError, url.inspect) do
          Jiggler::Config.new[:redis_url]
        end
        assert_match(
          /\AREDIS_URL must be a redis:\/\/, .* URL \(got (a malformed URL|"\w+:\/\/\*\*\*@)/,
          error.message
        )
        refute_includes error.message, secret
      end
      error = assert_raises(Jiggler::Config::InvalidError) do
        Jiggler::Config.new[:redis_url] = url
      end
      refute_includes error.message, secret
    end
  end

  it "raises from the client's enqueue without the password" do
    malformed.each_key do |url|
      with_env("REDIS_URL" => url) do
        Jiggler.reset!
        error = assert_raises(Jiggler::Config::InvalidError, url.inspect) do
          RecordJob.enqueue(1)
        end
        refute_includes error.message, secret
        refute_includes error.full_message, secret
      end
    end
  end

  it "refuses a database that is not a non-negative integer " \
    "in one line naming the setting" do
    [
      "redis://:s3cret@host:6379/abc",
      "redis://host/-1",
      "redis://host/08",
      "redis://host/0/",
      "rediss://host?db=x",
      "unix:///tmp/redis.sock?db=abc"
    ].each do |url|
      error = assert_raises(Jiggler::Config::InvalidError, url) do
        Jiggler::Config.new[:redis_url] = url
      end
      assert_match(
        /\Aconfig\[:redis_url\] must name its database by a non-negative integer/,
        error.message
      )
      refute_includes error.message, secret
    end
    [
      "redis://host:6379",
      "redis://host/",
      "redis://host/12",
      "unix:///tmp/r.sock?db=3"
    ].each do |url|
      config = Jiggler::Config.new
      config[:redis_url] = url
      assert_equal url, config[:redis_url]
    end
  end

  it "keeps redis-client's own errors about a URL from showing the password" do
    error = assert_raises(Jiggler::Config::InvalidError) do
      Jiggler::Store::Redis::Connection.config("redis://:s3cret@host:6379/abc")
    end
    refute_includes error.message, secret
  end

  it "redacts URLs in a free text, mistyped schemes included" do
    text = "failed: redis://:s3cret@h/0 and redis:/:s3cret@h " \
      "and redis//u:s3cret@h"
    refute_includes Jiggler::Config::Redaction.text(text), secret
  end
end

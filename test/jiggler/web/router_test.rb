# frozen_string_literal: true

require "minitest/autorun"
require "jiggler/web/router"

describe Jiggler::Web::Router do
  def router
    @router ||= Jiggler::Web::Router.new.tap do |router|
      router.get("/") { :root }
      router.get("/queues/:name") { :queue }
      router.post("/queues/:name/pause") { :pause }
      router.get("/:set/:key") { :entry }
    end
  end

  def matched(verb, path)
    route, params = router.match(verb, path)
    route && [route.block.call, params]
  end

  it "matches literal paths and named segments, decoded" do
    assert_equal [:root, {}], matched("GET", "/")
    assert_equal [:queue, {"name" => "mail box"}],
      matched("GET", "/queues/mail%20box")
    assert_equal [:entry, {"set" => "dead", "key" => "1.5-abc"}],
      matched("GET", "/dead/1.5-abc")
  end

  it "matches a segment only, never across slashes or with extra parts" do
    assert_nil matched("GET", "/queues/a/b")
    assert_nil matched("GET", "/queues/")
    assert_nil matched("GET", "/queuesx")
  end

  it "answers HEAD with the GET route, and tells which methods a path has" do
    assert_equal :queue, matched("HEAD", "/queues/mail").first
    assert_nil matched("POST", "/queues/mail")
    assert_equal ["POST"], router.allowed("/queues/mail/pause")
    assert_equal [], router.allowed("/nowhere/at/all")
  end

  it "takes the first route that matches" do
    assert_equal :pause, matched("POST", "/queues/mail/pause").first
    assert_equal :queue, matched("GET", "/queues/mail").first
  end
end

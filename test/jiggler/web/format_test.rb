# frozen_string_literal: true

require "test_helper"
require "jiggler/web/format"

describe Jiggler::Web::Format do
  include Jiggler::Web::Format

  it "shows a value as compact JSON, cut to the limit" do
    assert_equal %([1,"a",{"k":null}]), compact_json([1, "a", {"k" => nil}])
    assert_equal %([1,2…), compact_json([1, 2, 3], limit: 4)
  end

  # A stored payload may hold a string that is not UTF-8 (JSON parsing keeps its bytes): the page still renders.
  it "falls back to inspect for what JSON cannot show" do
    assert_equal %(["\\xFF"]), compact_json(["\xFF"])
    assert_match(/\A\[#<Object/, compact_json([Object.new]))
  end
end

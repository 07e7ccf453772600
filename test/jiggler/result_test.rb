# frozen_string_literal: true

require "test_helper"

# Jiggler.result reading what the store holds; the end-to-end cases (a server storing results) are in
# test/jiggler/batch/.
describe "Jiggler.result" do
  it "returns a stored value exactly, floats and nested data included" do
    value = {"price" => 0.1 + 0.2, "big" => 2**62, "list" => [nil, true, "é"]}
    store.save_results(
      [["a" * 24, Jiggler::Result.value("PriceJob", value)]], 60
    )
    assert_equal value, Jiggler.result("a" * 24, timeout: 1)
  end

  it "raises JobFailed for a stored error" do
    store.save_results(
      [["b" * 24, Jiggler::Result.error("KeyError", "no such key")]], 60
    )
    error = assert_raises(Jiggler::JobFailed) do
      Jiggler.result("b" * 24, timeout: 1)
    end
    assert_equal ["KeyError", "b" * 24], [error.error_class, error.jid]
    assert_equal "job #{"b" * 24} failed: KeyError: no such key", error.message
  end

  it "refuses a value that is not JSON-native, naming the job" do
    error = assert_raises(ArgumentError) do
      Jiggler::Result.value("PriceJob", Time.at(0))
    end
    assert_includes error.message, "PriceJob returned"
  end

  it "says so, without a stack trace from the parser, " \
    "when what is stored is not a result" do
    ["[1, 2]", "{}", "{not json"].each_with_index do |garbage, index|
      jid = index.to_s * 24
      store.save_results([[jid, garbage]], 60)
      error = assert_raises(Jiggler::Payload::MalformedError, garbage) do
        Jiggler.result(jid, timeout: 1)
      end
      assert_match(/not jiggler's|not valid JSON/, error.message)
    end
  end

  it "refuses a bad jid or timeout" do
    assert_raises(ArgumentError) { Jiggler.result(42, timeout: 1) }
    [-1, Float::NAN, "1"].each do |bad|
      assert_raises(ArgumentError, bad.inspect) do
        Jiggler.result("x", timeout: bad)
      end
    end
  end
end

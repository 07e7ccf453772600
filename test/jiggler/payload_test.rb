# frozen_string_literal: true

require "test_helper"
require "json"

# Stand-ins for ActiveSupport::HashWithIndifferentAccess and ActiveSupport::SafeBuffer, which Rails apps pass.
module PayloadTest
  class IndifferentHash < Hash; end

  class SafeText < String
    def to_s = self
  end

  class TagList < Array; end
end

describe Jiggler::Payload do
  def nest(depth) = (1..depth).reduce(1) { |inner, _| [inner] }

  def check(*args) = Jiggler::Payload.check_args!("MyJob", args)

  def refused(*args) = assert_raises(ArgumentError) { check(*args) }

  def job(args) = {"jid" => "0" * 24, "name" => "MyJob", "args" => args}

  def round_trip(args)
    Jiggler::Payload.load(Jiggler::Payload.dump(job(args)))["args"]
  end

  def assert_malformed(json)
    assert_raises(Jiggler::Payload::MalformedError, json.inspect) do
      Jiggler::Payload.load(json)
    end
  end

  describe ".check_args!" do
    it "accepts every JSON-native type" do
      args = [
        nil, true, false, 0, -7, 2**100, -(2**70), 1.5, -0.25,
        "", "text", "héllo ✓", [], {}
      ]
      nested = [
        [1, [2.5, ["x", nil, {"a" => [true, {"b" => {}}]}]]],
        {"k" => {"nested" => [1, "2", false]}}
      ]
      [args, nested].each do |list|
        check(*list)
        assert_equal list, round_trip(list)
      end
    end

    it "accepts an ASCII-only String in any encoding" do
      args = ["abc".b, "abc".encode("US-ASCII")]
      check(*args)
      assert_equal ["abc", "abc"], round_trip(args)
    end

    it "refuses non-JSON types, naming the argument position and the class" do
      [
        :symbol, Time.now, Object.new, 1r, 2i, 1..2, Class,
        Struct.new(:a).new(1)
      ].each do |bad|
        error = refused(1, "ok", bad)
        assert_includes error.message, "MyJob argument 3"
        assert_includes error.message, bad.class.name.to_s
      end
    end

    it "refuses NaN and Infinity" do
      [Float::NAN, Float::INFINITY, -Float::INFINITY].each do |bad|
        error = refused(bad)
        assert_includes error.message, "argument 1"
        assert_match(/finite/, error.message)
      end
    end

    it "refuses bad values nested in Arrays and Hashes" do
      assert_includes refused(1, [1, [2, :deep]]).message, "argument 2"
      assert_includes refused({"a" => {"b" => [Float::NAN]}}).message,
        "argument 1"
      assert_includes refused("x", {"when" => Time.at(0)}).message, "argument 2"
    end

    it "names the first bad argument when there are several" do
      error = refused(1, [2, [3]], {"a" => :first}, :second)
      assert_includes error.message, "argument 3"
      assert_includes error.message, "Symbol"
    end

    it "refuses Hash keys that are not Strings, naming the key" do
      [{a: 1}, {1 => "x"}, {nil => 1}, {"ok" => {sym: 2}}].each do |hash|
        error = refused("first", hash)
        assert_includes error.message, "argument 2"
        assert_match(/Hash key/, error.message)
      end
    end

    it "refuses invalid UTF-8 in Strings, nested Strings and binary Strings" do
      bad = String.new("caf\xC3", encoding: Encoding::UTF_8)
      [bad, [bad], {"k" => bad}, "é".b].each do |value|
        assert_match(/UTF-8/, refused(value).message)
      end
    end

    it "refuses invalid UTF-8 in a Hash key" do
      bad_key = String.new("k\xFF", encoding: Encoding::UTF_8)
      error = refused({bad_key => 1})
      assert_includes error.message, "argument 1"
    end

    it "accepts arguments nested NESTING_LIMIT deep and refuses deeper ones, " \
      "naming the limit and the argument" do
      limit = Jiggler::Payload::NESTING_LIMIT
      check(nest(limit), {"a" => nest(limit - 1)})
      [nest(limit + 1), {"a" => nest(limit)}, nest(3_500)].each do |deep|
        # a fiber's stack is where jobs enqueue jobs
        error = Fiber.new { refused("ok", deep) }.resume
        assert_includes error.message, "MyJob argument 2"
        assert_includes error.message,
          "nests deeper than #{limit} Arrays and Hashes " \
          "(Jiggler::Payload::NESTING_LIMIT)"
      end
    end

    it "keeps long values short in the message" do
      error = refused("x" * 1000, [:a] * 500)
      assert_includes error.message, "argument 2"
      assert_operator error.message.size, :<, 400
    end
  end

  describe ".dump and .load" do
    it "round-trips every JSON-native type exactly" do
      args = [
        nil, true, false, 0, -7, 2**100, -(2**70), 1.5,
        "héllo ✓ \u0000 \u2028", [1, [2]], {"a" => {"b" => [nil]}}
      ]
      assert_equal args, round_trip(args)
    end

    it "round-trips Floats without losing precision" do
      floats = [
        0.1 + 0.2, 1.0 / 3, 123_456_789.123_456_79,
        Float::MAX, Float::MIN, 5e-324, 1e20, 2.0**70
      ]
      assert_equal floats, round_trip(floats)
    end

    it "keeps the fields of a full payload" do
      payload = job([1]).merge(
        "queue" => "mailers", "retries" => 3, "created_at" => 1_700_000_000.25
      )
      assert_equal payload,
        Jiggler::Payload.load(Jiggler::Payload.dump(payload))
    end

    it "writes a JSON String that any JSON parser reads" do
      json = Jiggler::Payload.dump(job([1, "two", {"three" => 3.5}]))
      assert_equal job([1, "two", {"three" => 3.5}]), JSON.parse(json)
    end

    it "refuses garbage" do
      [
        "",
        "   ",
        "not json",
        "{",
        "{\"jid\":",
        "nil",
        "NaN",
        "[1] trailing",
        "{\"jid\":\"a\"}{}",
        "\xFF\xFE"
      ].each do |json|
        assert_malformed(json)
      end
      assert_malformed(nil)
    end

    it "refuses JSON that is not a job" do
      [
        "[]",
        "1",
        "\"text\"",
        "null",
        "{}",
        '{"name":"MyJob","args":[]}',
        '{"jid":"a","args":[]}',
        '{"jid":"a","name":"MyJob"}',
        '{"jid":"a","name":"MyJob","args":{}}',
        '{"jid":1,"name":"MyJob","args":[]}',
        '{"jid":"a","name":["MyJob"],"args":[]}'
      ].each { |json| assert_malformed(json) }
    end

    it "never builds objects from object markers" do
      json = '{"^o":"Object","jid":"a","name":"MyJob",' \
        '"args":[{"^o":"Object","x":1},{"^#1":[1,2]},{"^c":"File"}]}'
      data = Jiggler::Payload.load(json)
      assert_instance_of Hash, data
      assert_equal(
        [{"^o" => "Object", "x" => 1}, {"^#1" => [1, 2]}, {"^c" => "File"}],
        data["args"]
      )
    end

    it "never builds objects from json_class" do
      json = '{"jid":"a","name":"MyJob","args":[' \
        '{"json_class":"OpenStruct","a":1},{"json_class":"Range","a":[1,2]}]}'
      args = Jiggler::Payload.load(json)["args"]
      assert_equal(
        [
          {"json_class" => "OpenStruct", "a" => 1},
          {"json_class" => "Range", "a" => [1, 2]}
        ],
        args
      )
      assert(args.all?(Hash))
    end

    it "reads huge numbers as plain numbers, not BigDecimal" do
      args = Jiggler::Payload.load(
        '{"jid":"a","name":"MyJob",' \
        '"args":[1.00000000000000000000001,123456789012345678901234567890]}'
      )["args"]
      assert_equal [Float, Integer], args.map(&:class)
    end

    it "keeps every digit of floats and integers of any size" do
      args = [0.1 + 0.2, 1e300, -5e-324, 2**70, -(2**64), 123456789.123456789]
      assert_equal args, round_trip(args)
      assert_equal [Float, Float, Float, Integer, Integer, Float],
        round_trip(args).map(&:class)
      random = Random.new(7)
      floats = Array.new(10_000) { [random.bytes(8)].pack("a8").unpack1("D") }
        .select(&:finite?)
      assert_equal floats, round_trip(floats)
    end

    it "reads arguments nested up to NESTING_LIMIT, " \
      "and a payload nested deeper as malformed" do
      limit = Jiggler::Payload::NESTING_LIMIT
      assert_equal [nest(limit)], round_trip([nest(limit)])
      assert_equal [{"a" => nest(limit - 1)}],
        round_trip([{"a" => nest(limit - 1)}])
      [limit + 1, 3_500, 100_000].each do |depth|
        json =
          %({"jid":"a","name":"MyJob","args":[#{"[" * depth}1#{"]" * depth}]})
        error = Fiber.new { assert_malformed(json) }.resume
        assert_match(
          /nests deeper than #{limit} levels of arguments \(Jiggler::Payload::NESTING_LIMIT\)/,
          error.message
        )
      end
    end

    it "writes Hash, Array and String subclasses as the plain values " \
      "they are" do
      indifferent = PayloadTest::IndifferentHash.new.merge!(
        "id" => 1, "tags" => PayloadTest::TagList.new(["a"])
      )
      args = [
        indifferent,
        PayloadTest::SafeText.new("<b>ok</b>"),
        {"html" => PayloadTest::SafeText.new("x")}
      ]
      check(*args)
      assert_equal [{"id" => 1, "tags" => ["a"]}, "<b>ok</b>", {"html" => "x"}],
        round_trip(args)
      assert_equal [Hash, String], round_trip(args).first(2).map(&:class)
    end

    it "says what was wrong in the error" do
      error = assert_malformed('{"jid":"a"}')
      assert_match(/jid, name and args/, error.message)
      assert_includes error.message, '{\"jid\":\"a\"}'
    end
  end
end

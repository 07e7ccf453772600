# frozen_string_literal: true

require "test_helper"
require "jiggler/iteration"

# The enumerator helpers of Jiggler::Iteration: [item, cursor] pairs that start after the cursor given back.
describe Jiggler::Iteration::Enumerators do
  let(:helpers) { Object.new.extend(Jiggler::Iteration::Enumerators) }

  describe "enum_range" do
    it "yields each number with itself as its cursor, " \
      "from the start when there is no cursor" do
      enum = helpers.enum_range(3, 6, cursor: nil)
      assert_kind_of Enumerator, enum
      assert_equal [[3, 3], [4, 4], [5, 5], [6, 6]], enum.to_a
      assert_equal 4, enum.size
    end

    it "starts after the cursor" do
      assert_equal [[5, 5], [6, 6]], helpers.enum_range(3, 6, cursor: 4).to_a
      assert_equal 2, helpers.enum_range(3, 6, cursor: 4).size
      assert_empty helpers.enum_range(3, 6, cursor: 6).to_a
      assert_equal 0, helpers.enum_range(3, 6, cursor: 6).size
    end

    it "is lazy: a large range costs nothing until it is walked" do
      assert_equal [[1, 1], [2, 2]],
        helpers.enum_range(1, 10**12, cursor: nil).first(2)
    end

    it "refuses bounds and cursors that are not Integers" do
      assert_raises(ArgumentError) { helpers.enum_range(1, "9", cursor: nil) }
      error = assert_raises(Jiggler::Iteration::Error) do
        helpers.enum_range(1, 9, cursor: "4").to_a
      end
      assert_match(/cursor is an Integer \(got "4"\)/, error.message)
    end
  end

  describe "enum_array" do
    it "yields each element with its index, after the cursor" do
      assert_equal [["a", 0], ["b", 1], ["c", 2]],
        helpers.enum_array(%w[a b c], cursor: nil).to_a
      assert_equal [["c", 2]], helpers.enum_array(%w[a b c], cursor: 1).to_a
      assert_equal 0, helpers.enum_array(%w[a b c], cursor: 5).size
    end

    it "refuses what is not an Array" do
      assert_raises(ArgumentError) do
        helpers.enum_array({"a" => 1}, cursor: nil)
      end
    end
  end

  describe "enum_slices" do
    it "yields slices numbered from 0, after the cursor" do
      assert_equal [[[1, 2], 0], [[3, 4], 1], [[5], 2]],
        helpers.enum_slices([1, 2, 3, 4, 5], 2, cursor: nil).to_a
      assert_equal [[[5], 2]],
        helpers.enum_slices([1, 2, 3, 4, 5], 2, cursor: 1).to_a
    end

    it "refuses a slice size below 1" do
      assert_raises(ArgumentError) { helpers.enum_slices([1], 0, cursor: nil) }
    end
  end
end

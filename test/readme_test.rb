# frozen_string_literal: true

require "test_helper"
require "open3"
require "rbconfig"

# The README is the API: its Ruby examples must run as written.
describe "README" do
  readme = File.read(File.expand_path("../README.md", __dir__))
  blocks = readme.scan(/^```ruby\n(.*?)^```$/m).flatten.reject { |code| code.start_with?("# Gemfile") }

  it "has Ruby examples" do
    assert_operator blocks.size, :>=, 6
  end

  it "runs every Ruby example, in order, against a real Redis" do
    env = {"REDIS_URL" => RedisServer.instance.url}
    lib = File.expand_path("../lib", __dir__)
    output, status = Open3.capture2e(env, RbConfig.ruby, "-I", lib, "-e", blocks.join("\n"))
    assert status.success?, "README examples failed:\n#{output}"
    refute_match(/Error|warning/, output)
  end
end

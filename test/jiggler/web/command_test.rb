# frozen_string_literal: true

require "test_helper"
require "net/http"
require "socket"

# `jiggler web`: the dashboard served alone by the real executable.
describe "jiggler web" do
  def start_web(*args)
    process = ServerProcess.new("web", *args, namespace: @namespace).start
    @servers << process
    process
  end

  def get(port, path)
    Net::HTTP.get_response(URI("http://127.0.0.1:#{port}#{path}"))
  rescue SystemCallError
    nil
  end

  it "serves the dashboard on the given port, " \
    "on the store that the -r file configures" do
    RecordJob.with_options(queue: "from-cli-test").enqueue(1)
    port = free_port
    process = start_web("-p", port.to_s, "-r", "./test/fixtures/jobs.rb")
    response = wait_for(message: "the dashboard to answer\n#{process.log}") do
      get(port, "/queues")
    end
    assert_equal "200", response.code
    assert_includes response.body, "Redis store"
    assert_includes response.body, ">from-cli-test</a>"
    assert_includes process.log,
      "jiggler web: Redis store, on http://127.0.0.1:#{port}/"
  end

  it "prints its options" do
    process = start_web("--help")
    assert_equal 0, process.wait(timeout: 15)
    assert_includes process.log, "Usage: jiggler web [options]"
    assert_includes process.log, "--port PORT"
  end
end

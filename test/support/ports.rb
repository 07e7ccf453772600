# frozen_string_literal: true

require "socket"

# Loopback ports for private servers, and for "nothing listens here" checks.
module Ports
  module_function

  # A port the system just handed out and took back: free now, and closed unless someone starts listening on it.
  def free_port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] }

  # Waits until a server accepts connections on the port, for at most 10 s.
  # @parameter name [String] what should listen there, for the error.
  def wait_until_listening(port, name)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    begin
      TCPSocket.new("127.0.0.1", port).close
    rescue SystemCallError
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        raise "#{name} is not listening on port #{port}"
      end
      sleep 0.02
      retry
    end
  end
end

# frozen_string_literal: true

require "socket"

# Loopback ports for private servers, and for "nothing listens here" checks.
module Ports
  module_function

  # A port the system just handed out and took back: free now, and closed unless someone starts listening on it.
  def free_port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] }
end

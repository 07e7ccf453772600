# frozen_string_literal: true

# The HTTP workload's endpoint: every request is answered after 200 ms, each connection in a thread of its own, so
# hundreds of requests wait at once. Usage: ruby bench/harness/http_server.rb PORT
require "socket"

server = TCPServer.new("127.0.0.1", Integer(ARGV.fetch(0)))
server.listen(4096)
$stdout.sync = true
puts "listening"
loop do
  client = server.accept
  Thread.new(client) do |socket|
    socket.gets("\r\n\r\n")
    sleep 0.2
    socket.write(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n" \
        "Content-Length: 12\r\nConnection: close\r\n\r\nHello World!"
    )
  rescue SystemCallError, IOError
    nil
  ensure
    socket.close
  end
end

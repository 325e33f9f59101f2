# frozen_string_literal: true

require 'socket'

# A real HTTP/1.1 server on 127.0.0.1 for the adapter's tests, written on TCPServer (Ruby 3 has no
# WEBrick). Each request is answered by the block, `index -> [status, headers, hold seconds]`,
# after holding it that long; the server notes when each request arrived and how many were in
# flight at once.
class LoopbackServer
  attr_reader :port

  def initialize(&answer)
    @answer = answer
    @lock = Mutex.new
    @arrivals = []
    @in_flight = @most_in_flight = 0
    @listener = TCPServer.new('127.0.0.1', 0)
    @port = @listener.addr[1]
    @acceptor = Thread.new { accept_forever }
  end

  def url = "http://127.0.0.1:#{@port}/"

  # Monotonic seconds at which each request's head was read, in order.
  def arrivals = @lock.synchronize { @arrivals.dup }

  def most_in_flight = @lock.synchronize { @most_in_flight }

  def close
    @listener.close
    @acceptor.join
  end

  # A port nothing listens on: connecting to it is refused.
  def self.refused_url
    probe = TCPServer.new('127.0.0.1', 0)
    port = probe.addr[1]
    probe.close
    "http://127.0.0.1:#{port}/"
  end

  private

  def accept_forever
    loop { Thread.new(@listener.accept) { |client| serve(client) } }
  rescue IOError, Errno::EBADF
    nil # closed
  end

  def serve(client)
    return unless read_head(client)

    index = @lock.synchronize do
      @arrivals << Process.clock_gettime(Process::CLOCK_MONOTONIC)
      @in_flight += 1
      @most_in_flight = [@most_in_flight, @in_flight].max
      @arrivals.size - 1
    end
    status, headers, hold = @answer.call(index)
    sleep(hold) if hold&.positive?
    @lock.synchronize { @in_flight -= 1 } # before the answer leaves, so the next one is not counted with it
    body = "#{status}\n"
    head = ["HTTP/1.1 #{status} Answer", "Content-Length: #{body.bytesize}", 'Connection: close']
    headers.each { |name, value| head << "#{name}: #{value}" }
    client.write("#{head.join("\r\n")}\r\n\r\n#{body}")
  ensure
    client.close
  end

  # The request line and headers (the tests send no body); nil if the client hung up first.
  def read_head(client)
    return nil unless client.gets

    while (line = client.gets)
      return true if line == "\r\n"
    end
    nil
  end
end

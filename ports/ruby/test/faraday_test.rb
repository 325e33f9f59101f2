# frozen_string_literal: true

# The Faraday middleware (lib/fair_share/faraday.rb) against a real HTTP server on loopback.
#   cd ports/ruby && ruby -Ilib -Itest -e 'Dir.glob("test/*_test.rb").each { |f| require File.expand_path(f) }'
require 'minitest/autorun'
require 'fair_share'
require_relative 'loopback_server'

FARADAY_MISSING = begin
  require 'fair_share/faraday'
  nil
rescue LoadError => e
  "needs the faraday gem (#{e.message}): apt-get install ruby-faraday, or gem install faraday"
end
warn "faraday_test.rb: every test skipped: #{FARADAY_MISSING}" if FARADAY_MISSING

# A real law that also notes what it was told, to check that the middleware tells it.
class RecordingLaw < FairShare
  Observed = Struct.new(:thread, :status, :headers, :latency)

  def observed = @lock.synchronize { (@observed || []).dup }

  def observe(thread, now, status, headers, latency, unix = nil)
    seen = Observed.new(thread, status, headers.to_h { |k, v| [k.to_s.downcase, v] }, latency)
    @lock.synchronize { (@observed ||= []) << seen }
    super
  end
end

class FaradayMiddlewareTest < Minitest::Test
  # Fast enough that the law's own pacing is a few milliseconds: what a test sees is the adapter.
  FAST = { quota: 1000, period: 1 }.freeze

  def setup
    skip FARADAY_MISSING if FARADAY_MISSING
    @servers = []
  end

  def teardown
    @servers&.each(&:close)
  end

  def serve(&answer) = LoopbackServer.new(&answer).tap { |s| @servers << s }

  def connection(url, law, &more)
    Faraday.new(url) do |f|
      f.request :fair_share, law: law
      more&.call(f)
      f.adapter :net_http
    end
  end

  def test_a_retry_after_delays_the_next_request_by_its_seconds
    server = serve { |i| i.zero? ? [429, { 'Retry-After' => '1' }, 0] : [200, {}, 0] }
    conn = connection(server.url, FairShare.new(1, **FAST))
    assert_equal 429, conn.get.status
    assert_equal 200, conn.get.status
    gap = server.arrivals[1] - server.arrivals[0]
    assert_operator gap, :>=, 1.0, 'the second request went before the Retry-After was over'
    assert_operator gap, :<, 2.5
  end

  def test_requests_beyond_the_laws_threads_wait_for_a_free_slot
    server = serve { [200, {}, 0.2] }
    law = FairShare.new(2, **FAST)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    # Each thread its own connection: the slots belong to the law, not to a connection.
    statuses = Array.new(6) { Thread.new { connection(server.url, law).get.status } }.map(&:value)
    took = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    assert_equal [200] * 6, statuses
    assert_equal 2, server.most_in_flight
    assert_operator took, :>=, 0.6, 'six requests of 0.2 s, two at a time, take three rounds'
  end

  def test_every_answer_reaches_the_law_with_its_headers_and_latency
    server = serve { [200, { 'RateLimit-Remaining' => '7', 'RateLimit-Limit' => '10' }, 0.1] }
    law = RecordingLaw.new(1, **FAST)
    conn = Faraday.new(server.url) do |f|
      f.use FairShare::Faraday::Middleware, law: law
      f.adapter :net_http
    end
    assert_equal 200, conn.get.status
    seen = law.observed
    assert_equal 1, seen.size
    assert_equal [0, 200, '7'], [seen[0].thread, seen[0].status, seen[0].headers['ratelimit-remaining']]
    assert_operator seen[0].latency, :>=, 0.1, 'latency is from the send to the answer'
    assert_operator seen[0].latency, :<, 2.0
  end

  def test_a_refused_connection_reaches_the_law_as_no_answer_and_is_raised_again
    law = RecordingLaw.new(1, **FAST)
    assert_raises(Faraday::ConnectionFailed) { connection(LoopbackServer.refused_url, law).get }
    assert_equal [nil], law.observed.map(&:status)
    # The slot came back, and the law backs its thread off a second (error_backoff) for it.
    server = serve { [200, {}, 0] }
    before = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    assert_equal 200, connection(server.url, law).get.status
    assert_operator server.arrivals[0] - before, :>=, 0.9, 'the error did not back the thread off'
  end

  def test_a_status_raised_inside_the_middleware_is_read_as_that_answer
    server = serve { |i| i.zero? ? [429, { 'Retry-After' => '1' }, 0] : [200, {}, 0] }
    law = RecordingLaw.new(1, **FAST)
    conn = connection(server.url, law) { |f| f.response :raise_error }
    assert_raises(Faraday::ClientError) { conn.get }
    assert_equal 200, conn.get.status
    assert_equal [429, 200], law.observed.map(&:status)
    assert_operator server.arrivals[1] - server.arrivals[0], :>=, 1.0, 'the refusal was not read'
  end

  def test_a_concurrency_other_than_the_laws_threads_is_refused
    law = FairShare.new(4, **FAST)
    error = assert_raises(ArgumentError) do
      Faraday.new('http://127.0.0.1:1/') { |f| f.request :fair_share, law: law, concurrency: 8 }.get
    end
    assert_match(/concurrency 8 is not the law's 4 threads/, error.message)
  end
end

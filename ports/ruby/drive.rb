#!/usr/bin/env ruby
# Drives lib/fair_share.rb against a URL: P processes (fork) x T threads, each process with one
# FairShare shared by its threads, each thread with its own keep-alive connection. Prints one
# JSON line of counts; exits 0 only if at least one request was answered.
#
#   ruby ports/ruby/drive.rb --url http://127.0.0.1:9292/ --processes 5 --threads 5 --seconds 40
#        [--quota Q --period SECS] [--group NAME] [--param name=value ...]
#   ruby ports/ruby/drive.rb --via faraday --url ...   # the same through the Faraday middleware
#   ruby ports/ruby/drive.rb --replay ports/scripts/X.json    # {"waits":[...]} in nanoseconds
#   ruby ports/ruby/drive.rb --answers ports/answers.json     # {"readings":[...]}: each answer as read
# The seconds count from here, before anything loads (Faraday takes a while on a busy machine).
STARTED = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)
require 'json'
require 'net/http'
require 'uri'
require_relative 'lib/fair_share'

USAGE = 'usage: drive.rb [--via faraday] --url URL --processes P --threads T --seconds S [--quota Q --period SECS] ' \
        '[--group NAME] [--param name=value ...] | drive.rb --replay SCRIPT.json | drive.rb --answers FIXTURE.json'
COUNTS = %i[requests ok limited errors transport_errors].freeze
MAX = 10_000 # processes, and threads per process

def fail_with(message)
  warn "drive.rb: #{message}"
  warn USAGE
  exit 2
end

def number(flag, text, integer: false)
  v = integer ? Integer(text, 10) : Float(text)
  fail_with("#{flag} must be above 0 (got #{text})") unless v.positive? && v.finite?
  v
rescue ArgumentError, TypeError
  fail_with("#{flag} must be a number (got #{text.inspect})")
end

def parse(argv)
  o = { processes: 1, threads: 1, seconds: 10.0, params: {} }
  until argv.empty?
    flag = argv.shift
    value = argv.shift or fail_with("#{flag} needs a value")
    case flag
    when '--url' then o[:url] = value
    when '--processes', '--threads'
      o[flag[2..].to_sym] = number(flag, value, integer: true)
      fail_with("#{flag} must be at most #{MAX} (got #{value})") if o[flag[2..].to_sym] > MAX
    when '--seconds' then o[:seconds] = number(flag, value)
    when '--quota' then o[:params][:quota] = number(flag, value)
    when '--period' then o[:params][:period] = number(flag, value)
    when '--group' then o[:group] = value
    when '--via'
      fail_with("--via takes faraday (got #{value.inspect})") unless value == 'faraday'
      o[:via] = value
    when '--replay' then o[:replay] = value
    when '--answers' then o[:answers] = value
    when '--param'
      name, v = value.split('=', 2)
      fail_with("--param wants name=value (got #{value.inspect})") if v.nil?
      o[:params][name.to_sym] = v
    else fail_with("unknown flag #{flag}")
    end
  end
  o[:port] = o[:via] ? "ruby-#{o[:via]}" : 'ruby'
  o[:group] ||= o[:port]
  o
end

def replay(path)
  script = JSON.parse(File.read(path))
  # One number every draw returns, or a list the draws go round in order.
  units = Array(script['random']).map { |u| Float(u) }
  fail_with("#{path}: random is an empty list") if units.empty?
  draws = units.cycle
  params = (script['params'] || {}).transform_keys(&:to_sym)
  threads = script['threads']
  fail_with("#{path}: threads must be a whole number from 1 to 1000000 (got #{threads.inspect})") unless
    threads.is_a?(Integer) && threads.between?(1, 1_000_000)
  law = FairShare.new(threads, random: -> { draws.next }, **params)
  waits = []
  uint = ->(e, k) { e[k].is_a?(Integer) && e[k] >= 0 ? e[k] : fail_with("#{path}: #{k} is not a whole number: #{e}") }
  script['events'].each do |e|
    case e['do']
    when 'wait' then waits << law.wait_ns(uint.(e, 'thread'), uint.(e, 'at'))
    when 'answer'
      law.observe_ns(uint.(e, 'thread'), uint.(e, 'at'), uint.(e, 'status'), e['headers'] || [], uint.(e, 'latency'),
                     uint.(e, 'unix'))
    else fail_with("#{path}: an event does #{e['do'].inspect}, not wait or answer")
    end
  end
  puts JSON.generate(waits: waits)
rescue SystemCallError, JSON::ParserError, ArgumentError, TypeError, NoMethodError => e
  fail_with("#{path}: #{e.message}")
end

# Every answer of a fixture (ports/answers.json) as the port reads it: one JSON line.
def answers(path)
  readings = JSON.parse(File.read(path)).fetch('answers').map do |c|
    a = FairShare.read_answer(c.fetch('status'), c.fetch('headers'), 0, unix_ns: c.fetch('wall'))
    { status: a.status, remaining: a.remaining, limit: a.limit, retry_after: a.retry_after,
      policy: a.quota && { limit: a.quota[0], window: a.quota[1] }, reset: a.reset }
  end
  puts JSON.generate(readings: readings)
rescue SystemCallError, JSON::ParserError, KeyError, ArgumentError, TypeError, NoMethodError => e
  fail_with("#{path}: #{e.message}")
end

def mono = Process.clock_gettime(Process::CLOCK_MONOTONIC, :nanosecond)

# One thread's loop until the deadline; its counts.
def run_thread(o, uri, law, process, thread, epoch, stop)
  counts = COUNTS.to_h { |k| [k, 0] }
  headers = { 'X-Client-Id' => "#{o[:group]}/p#{process}/t#{thread}" }
  conn = nil
  while (now = mono - epoch) < stop
    d = law.wait_ns(thread, now)
    if d.positive?
      sleep([d, stop - now].min / 1e9)
      next
    end
    sent = mono
    begin
      unless conn
        conn = Net::HTTP.new(uri.host, uri.port)
        conn.use_ssl = uri.scheme == 'https'
        conn.max_retries = 0
        conn.open_timeout = conn.read_timeout = 30
        conn.start
      end
      res = conn.request(Net::HTTP::Get.new(uri.request_uri, headers))
      answered = mono
      got = law.observe_ns(thread, answered - epoch, res.code.to_i, res.to_hash, answered - sent)
      counts[:requests] += 1
      counts[{ ok: :ok, limited: :limited }.fetch(got, :errors)] += 1
    rescue StandardError
      conn&.finish rescue nil # rubocop:disable Style/RescueModifier
      conn = nil
      counts[:transport_errors] += 1
      law.observe_ns(thread, mono - epoch, nil, [], mono - sent)
    end
  end
  conn&.finish rescue nil # rubocop:disable Style/RescueModifier
  counts
end

# One worker's loop through the Faraday middleware (lib/fair_share/faraday.rb), which picks the
# law's thread and waits itself: the worker only sends, on its own connection, until the deadline.
def run_faraday_thread(o, _uri, law, process, thread, epoch, stop)
  counts = COUNTS.to_h { |k| [k, 0] }
  conn = Faraday.new(url: o[:url], headers: { 'X-Client-Id' => "#{o[:group]}/p#{process}/t#{thread}" }) do |f|
    f.request :fair_share, law: law
    f.options.open_timeout = f.options.timeout = 30
    f.adapter :net_http
  end
  while mono - epoch < stop
    begin
      res = conn.get
      counts[:requests] += 1
      got = FairShare.read_answer(res.status, res.headers, 0).status
      counts[{ ok: :ok, limited: :limited }.fetch(got, :errors)] += 1
    rescue StandardError
      counts[:transport_errors] += 1
    end
  end
  counts
end

def run_process(o, process, started)
  uri = URI(o[:url])
  law = FairShare.new(o[:threads], **o[:params])
  epoch = mono
  stop = (o[:seconds] * 1e9).round - (epoch - started) # the seconds count from the parent's start
  worker = o[:via] ? method(:run_faraday_thread) : method(:run_thread)
  threads = Array.new(o[:threads]) { |t| Thread.new { worker.call(o, uri, law, process, t, epoch, stop) } }
  threads.map(&:value).reduce { |a, b| a.merge(b) { |_, x, y| x + y } }
end

o = parse(ARGV.dup)
if o[:replay]
  replay(o[:replay])
  exit 0
end
if o[:answers]
  answers(o[:answers])
  exit 0
end
fail_with('--url is required') unless o[:url]
if o[:via]
  begin
    require_relative 'lib/fair_share/faraday'
  rescue LoadError => e
    fail_with("--via faraday needs the faraday gem: #{e.message}")
  end
end
begin
  uri = URI(o[:url])
  fail_with("--url must be http:// or https:// (got #{o[:url]})") unless %w[http https].include?(uri.scheme) && uri.host
  FairShare.new(o[:threads], **o[:params])
rescue URI::InvalidURIError, ArgumentError => e
  fail_with(e.message)
end
started = STARTED
pipes = Array.new(o[:processes]) do |p|
  r, w = IO.pipe
  pid = fork do
    r.close
    w.write(JSON.generate(run_process(o, p, started)))
    w.close
    exit! 0
  end
  w.close
  [pid, r]
end
total = COUNTS.to_h { |k| [k, 0] }
pipes.each do |pid, r|
  said = r.read
  Process.wait(pid)
  JSON.parse(said, symbolize_names: true).each { |k, v| total[k] += v } unless said.empty?
end
puts JSON.generate({ port: o[:port], follows: FairShare::FOLLOWS, processes: o[:processes], threads: o[:threads] }.merge(total))
exit(total[:requests].positive? ? 0 : 1)

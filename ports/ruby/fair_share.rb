# fair-share law 1 (throttle-sim 0.1, src/throttle/fair_share.rs of 2026-11-26), in Ruby with
# the standard library only. A mirror of that file step by step (docs/fair-share.md explains the
# law): time is whole nanoseconds inside, the random draws come in the same order, and answers
# are read as src/engine/live/headers.rs reads them, so the same answers give the same waits.
#
#   law = FairShare.new(5)                       # threads of this process; params as keywords
#   loop do
#     d = law.wait(thread, now)                  # now: seconds on the caller's monotonic clock
#     next sleep(d) if d > 0                     # 0: send now (the send is booked)
#     res = http.request(get)                    # ... then, with the latency in seconds:
#     law.observe(thread, now2, res.code.to_i, res.to_hash, latency)
#   end
require 'time'

class FairShare
  NS = 1_000_000_000
  U64 = 2**64 - 1
  DAY = 86_400 * NS
  DEFAULTS = { quota: nil, period: nil, first_spread: 0.0, initial_sleep: nil, reserve: 0.005,
               span: 0.03, crowd: 1000.0, gain: 0.4, window_periods: 1.0, min_samples: 3,
               min_flow: 30.0, drain_windows: 4.0, drain_fill: 1.0 / 12.0, full_level: 0.9,
               full_drain: 1.0, pull_periods: 4.0, pull_max: 0.5, decrease: 0.5,
               retry_jitter: 0.5, jitter: 0.1, increase: 0.15, error_backoff: 1.0,
               error_backoff_max: 60.0, max_rate: 4.0 }.freeze
  DURATIONS = %i[period first_spread initial_sleep error_backoff error_backoff_max].freeze
  Sample = Struct.new(:t, :r)
  ThreadState = Struct.new(:target, :last_send, :jit, :hold, :errors, :pending)
  # What an answer said, as the law reads it (src/exchange.rs's Response); times in nanoseconds.
  Answer = Struct.new(:status, :remaining, :limit, :retry_after, :quota, :reset, :latency)

  # Seconds to nanoseconds as src/time.rs rounds them: 0 for NaN or negative, saturating, halves up.
  def self.from_secs(s)
    return 0 if s.nan? || s <= 0
    n = s * 1e9
    return U64 if n >= 18_446_744_073_709_551_615.0
    whole = n.to_i
    n - whole.to_f >= 0.5 ? whole + 1 : whole
  end

  def self.secs(n) = n.to_f / 1e9
  def self.fmax(a, b) = a.nan? ? b : (b.nan? || a >= b ? a : b) # Rust's f64::max and min
  def self.fmin(a, b) = a.nan? ? b : (b.nan? || a <= b ? a : b)
  def self.clamp(v, lo, hi) = v < lo ? lo : (v > hi ? hi : v)

  attr_reader :x, :decreases

  def initialize(threads, random: Random.method(:rand), **params)
    unknown = params.keys - DEFAULTS.keys
    raise ArgumentError, "unknown fair-share parameter: #{unknown.join(', ')}" unless unknown.empty?
    @c = DEFAULTS.merge(params)
    @ns = DURATIONS.to_h { |k| [k, @c[k] && FairShare.from_secs(Float(@c[k]))] }
    (DEFAULTS.keys - DURATIONS - %i[quota]).each { |k| @c[k] = Float(@c[k]) }
    @c[:quota] = Float(@c[:quota]) if @c[:quota]
    bad = problems
    raise ArgumentError, "fair-share: #{bad.join('; ')}" unless bad.empty?
    @random = random
    @lock = Mutex.new
    n = [threads.to_i, 1].max
    @threads = Array.new(n) { ThreadState.new(nil, nil, 0.0, 0, 0, false) }
    quota = @c[:quota] || 4500.0
    @period = @ns[:period] ? FairShare.secs(@ns[:period]) : 3600.0
    @rate = quota / @period
    @limit = quota
    @policy = @offset = @window = @newest = @last_decrease = @last_increase = nil
    @reset_at = @sliding_since = nil
    @headers = @full_start = @sliding = false
    @clock_at = 0
    @clock_phase = 0.0
    @samples = @decreases = @updates = @sliding_votes = 0
    x0 = @rate / n
    x0 = FairShare.fmin(1.0 / FairShare.secs(@ns[:initial_sleep]), x0) if @ns[:initial_sleep]
    @x = clamp_rate(x0)
  end

  def problems
    out = []
    pos = { quota: @c[:quota] || 4500.0, period: @ns[:period] ? FairShare.secs(@ns[:period]) : 3600.0 }
    %i[crowd gain drain_windows full_drain pull_periods max_rate].each { |k| pos[k] = @c[k] }
    pos[:error_backoff] = FairShare.secs(@ns[:error_backoff])
    pos.each { |k, v| out << "#{k} must be a number above 0 (got #{v})" unless v.finite? && v > 0 }
    %i[reserve span window_periods drain_fill pull_max retry_jitter increase min_flow full_level].each do |k|
      out << "#{k} must be a number of 0 or more (got #{@c[k]})" unless @c[k].finite? && @c[k] >= 0
    end
    out << 'quota and period must be set together' if @c[:quota].nil? != @c[:period].nil?
    out << "reserve must be below 1 (got #{@c[:reserve]})" unless @c[:reserve] < 1
    out << "pull_max must be at most 1 (got #{@c[:pull_max]})" unless @c[:pull_max] <= 1
    out << "gain must be at most 1 (got #{@c[:gain]})" unless @c[:gain] <= 1
    out << "decrease must be above 0 and below 1 (got #{@c[:decrease]})" unless @c[:decrease] > 0 && @c[:decrease] < 1
    out << "jitter must be from 0 to below 1 (got #{@c[:jitter]})" unless @c[:jitter] >= 0 && @c[:jitter] < 1
    out << "min_samples must be at least 2 (got #{@c[:min_samples]})" unless @c[:min_samples] >= 2
    out << 'error_backoff_max must be at least error_backoff' if @ns[:error_backoff_max] < @ns[:error_backoff]
    out
  end

  # Seconds to wait before `thread` sends (0.0: send now, the send is booked); `now` in seconds.
  def wait(thread, now) = FairShare.secs(wait_ns(thread, FairShare.from_secs(now)))

  # After an answer (status nil: no answer came); `now` and `latency` in seconds, `unix` the wall
  # clock in seconds (for GitHub's epoch reset and an HTTP-date Retry-After; default now).
  def observe(thread, now, status, headers, latency, unix = nil)
    observe_ns(thread, FairShare.from_secs(now), status, headers, FairShare.from_secs(latency), unix)
  end

  def wait_ns(thread, now)
    @lock.synchronize do
      th = @threads[thread]
      delay(now, thread) unless th.pending
      th.pending = true
      acquire(now, thread)
    end
  end

  def observe_ns(thread, now, status, headers, latency, unix = nil)
    answer = FairShare.read_answer(status, headers || [], latency, unix)
    @lock.synchronize { on_response(now, thread, answer) }
    answer.status
  end

  private

  def clamp_rate(x) = FairShare.clamp(x, @rate / @c[:crowd] * 0.01, @c[:max_rate] * @rate)
  def reserve = FairShare.fmin(FairShare.fmax(@c[:reserve] * @limit, 1.0), @limit * 0.25)
  def refill = @reset_at ? 0.0 : @rate
  def spacing = 1.0 / @x
  def window_secs = @c[:window_periods] / @x / Math.sqrt(@threads.size.to_f)
  def loop_secs = FairShare.fmax(window_secs, @c[:min_flow] / @rate)
  def min_flow = @reset_at ? FairShare.fmin(@c[:min_flow], @limit * 0.3) : @c[:min_flow]
  def clamp_step(v) = FairShare.clamp(v, -Math.log(100.0), Math.log(2.0))
  def draw(lo, hi) = lo + @random.call * (hi - lo)

  def slope
    room = FairShare.fmax(@limit - reserve, 0.0) * 0.8
    span = FairShare.fmax(@c[:span] * @limit, FairShare.fmin(4.0, room))
    FairShare.fmax(span / Math.log(@c[:crowd]), Float::MIN)
  end

  def price(r) = @rate / @c[:crowd] * Math.exp(FairShare.fmin((r - reserve) / slope, 50.0))

  def to_reset(t)
    return nil unless @reset_at
    m = (t - @reset_at) % @period # Ruby's float % is Rust's rem_euclid for a positive period
    @period - m
  end

  def planned(t)
    left = to_reset(t)
    left ? FairShare.fmax(@limit - reserve, 0.0) * left / @period : 0.0
  end

  def target(r, t)
    if (left = to_reset(t))
      res = reserve * FairShare.fmin(left / @period, 1.0)
      left = FairShare.fmax(left, window_secs)
      return FairShare.fmax((r + 1.0 - res) / left, @rate * 0.05)
    end
    tau = FairShare.fmax(@c[:drain_fill] * @limit / @rate, @c[:drain_windows] * loop_secs)
    surplus = (r - reserve) / tau
    surplus = FairShare.fmin(surplus, @c[:full_drain] * @rate) if @full_start
    FairShare.fmax(@rate + surplus, @rate * 0.25)
  end

  def phase(now) = @clock_phase + FairShare.secs([now - @clock_at, 0].max) * @x

  def set_rate(now, x)
    now = [now, @clock_at].max
    @clock_phase = phase(now)
    @clock_at = now
    @x = clamp_rate(x)
  end

  def apply_window(now, first, last)
    dt = last.t - first.t
    return apply_sliding_window(now, first, last, dt) if @sliding
    total = FairShare.fmax(refill - (last.r - first.r) / dt, @rate * 0.02)
    target = target((first.r + last.r) / 2.0, (first.t + last.t) / 2.0)
    ln_x = Math.log(@x) + @c[:gain] * clamp_step(Math.log(target / total))
    price = price(last.r - planned(last.t))
    n = @threads.size.to_f
    crowd = FairShare.fmax(total / FairShare.fmax(@x, price), n)
    pull = FairShare.fmin(slope / (@c[:pull_periods] * crowd), @c[:pull_max])
    pull *= 1.0 - FairShare.clamp(n * @x / total, 0.0, 1.0)
    cap = @full_start ? target * @x / total : target
    ln_x += pull * FairShare.fmax(Math.log(FairShare.fmin(price, cap)) - ln_x, -Math.log(100.0))
    set_rate(now, Math.exp(ln_x))
  end

  def apply_sliding_window(now, first, last, dt)
    average = (@limit - (first.r + last.r) / 2.0) / @period
    fall = (first.r - last.r) / dt
    total = FairShare.fmax(FairShare.fmax(average, fall), @rate * 0.02)
    gain = fall > average ? @c[:gain] : @c[:gain] * FairShare.fmin(1.0 * dt / @period, 1.0)
    set_rate(now, Math.exp(Math.log(@x) + gain * clamp_step(Math.log(@limit / @period / total))))
  end

  def read_reset(t, stated, r)
    if @reset_at || (@policy.nil? && @c[:quota].nil?)
      @sliding = false
      @sliding_votes = 0
      @sliding_since = nil
      return
    end
    bucket = FairShare.fmax(@limit - r, 0.0) / @rate
    slack = FairShare.fmax(@period * 0.02, 1.0)
    if stated >= @period - slack && stated > bucket + 1.5 * slack
      @sliding_since ||= t
      @sliding_votes += 1
      @sliding = true if @sliding_votes >= 3 && t - @sliding_since > 2.0 * slack
    elsif stated < @period - 1.5 * slack
      @sliding_votes = 0
      @sliding_since = nil
      @sliding = false
    end
  end

  def open_window(s)
    @window = s
    @samples = 1
  end

  def observe_level(now, t, r)
    s = Sample.new(t, r)
    if @newest.nil? && r >= @c[:full_level] * @limit
      @full_start = true
    elsif r <= reserve + slope * Math.log(@c[:crowd])
      @full_start = false
    end
    if @newest
      if t >= @newest.t
        if r > @newest.r + refill * (t - @newest.t) + FairShare.fmax(@limit * 0.1, 2.0)
          @reset_at = (@newest.t + t) / 2.0
          @full_start = false
          @newest = s
          return open_window(s)
        end
        @reset_at = nil if @reset_at && r > @newest.r + 2.0
        @newest = s
      end
    else
      @newest = s
    end
    return open_window(s) unless (first = @window)
    @samples += 1
    flow = @rate * (t - first.t) - (r - first.r)
    periods = @updates.zero? ? 0.7 : 1.0
    return unless t - first.t >= window_secs * periods && @samples >= @c[:min_samples] && flow >= min_flow
    apply_window(now, first, s)
    @updates += 1
    open_window(s)
  end

  def take_policy(now, quota, limit_from_quota)
    return if @policy == quota
    @policy = quota
    rate = quota[0].to_f * 1e9 / quota[1].to_f
    scale = rate / @rate
    @rate = rate
    @period = FairShare.secs(quota[1])
    @limit = quota[0].to_f if limit_from_quota
    set_rate(now, @x * scale)
  end

  def wait_left(now, thread)
    th = @threads[thread]
    left = th.target ? FairShare.from_secs(FairShare.fmax(th.target + th.jit - phase(now), 0.0) / @x) : 0
    left = [left, [th.hold - now, 0].max].max
    [left, [FairShare.from_secs(spacing / 8.0), 1].max].min
  end

  def delay(now, thread)
    th = @threads[thread]
    unless th.target
      spread = FairShare.fmax(FairShare.secs(@ns[:first_spread]) * @x, 1.0)
      unless @offset
        @offset = draw(0.0, 1.0)
        @clock_at = now
        @clock_phase = 0.0
      end
      th.target = (thread + @offset) / @threads.size * spread
    end
    j = @c[:jitter]
    th.jit = j <= 0 ? 0.0 : draw(-j, j) / @threads.size
  end

  def acquire(now, thread)
    left = wait_left(now, thread)
    return left unless left.zero?
    ph = phase(now)
    th = @threads[thread]
    nxt = (th.target || ph) + 1.0
    nxt += (ph + 0.5 - nxt).ceil.to_f if nxt < ph + 0.5
    th.target = nxt
    th.last_send = now
    th.pending = false
    0
  end

  def on_response(now, thread, a)
    take_policy(now, a.quota, a.limit.nil?) if @c[:quota].nil? && a.quota && a.quota[0].to_f * 1e9 / a.quota[1] > 0
    @limit = a.limit.to_f if a.limit && a.limit > 0
    th = @threads[thread]
    sent = th.last_send || now
    if a.remaining && %i[ok limited].include?(a.status)
      @headers = true
      read_reset(FairShare.secs(now), FairShare.secs(a.reset), a.remaining.to_f) if a.reset && a.status == :ok
      counted = [[now - a.latency / 2, 0].max, sent].max
      observe_level(now, FairShare.secs(counted), a.remaining.to_f)
    end
    case a.status
    when :ok
      th.errors = 0
      unless @headers
        since = @last_increase ? FairShare.secs(now - [@last_increase, now].min) : 0.0
        set_rate(now, @x + @c[:increase] * @rate * @rate / @limit * since)
        @last_increase = now
      end
    when :limited
      th.errors = 0
      period = FairShare.from_secs(spacing)
      left = to_reset(FairShare.secs(now))
      spent = @period * @x * @threads.size >= 4.0 && a.retry_after && left &&
              (FairShare.secs(a.retry_after) - left).abs <= 0.1 * @period
      if !spent && (@last_decrease.nil? || (sent >= @last_decrease && now >= [@last_decrease + period, U64].min))
        factor = @c[:decrease]
        if @sliding
          per_period = @threads.size * @x * @period
          factor = FairShare.fmax(1.0 - 1.0 / FairShare.fmax(per_period, 1.0), @c[:decrease])
        end
        set_rate(now, @x * factor)
        @last_decrease = now
        @decreases += 1
        @window = nil
        @samples = 0
      end
      wait = 0
      if a.retry_after
        ra = FairShare.secs(a.retry_after)
        stretch = @c[:retry_jitter] > 0 ? draw(0.0, @c[:retry_jitter]) : 0.0
        wait = FairShare.from_secs(ra + stretch * FairShare.fmin(ra, spacing))
      end
      th.hold = [now + wait, U64].min
    else
      base = FairShare.secs(@ns[:error_backoff]) * 2.0**[th.errors, 30].min
      th.hold = [now + FairShare.from_secs(FairShare.fmin(base, FairShare.secs(@ns[:error_backoff_max]))), U64].min
      th.errors += 1
    end
  end

  # --- Reading an answer: src/engine/live/headers.rs (`read_response` at scale 1) ---------------

  U64_TEXT = /\A\+?\d+\z/
  F64_TEXT = /\A[+-]?(?:inf|infinity|nan|(?:\d+\.?\d*|\.\d+)(?:e[+-]?\d+)?)\z/i

  # `status` an HTTP status (nil: no answer came), `headers` pairs or a Hash (a value may be an
  # Array, as Net::HTTPResponse#to_hash gives: its first is read), `latency` nanoseconds.
  def self.read_answer(status, headers, latency, unix = nil)
    h = {}
    headers.each do |k, v|
      k = k.to_s.downcase
      h[k] = (v.is_a?(Array) ? v.first : v).to_s unless h.key?(k)
    end
    now = if unix.nil? then Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
          elsif unix.is_a?(Integer) then unix * NS
          else (unix * 1e9).round
          end
    get = ->(name) { (v = h[name]) && v.match?(/\A[\t\x20-\x7e]*\z/) ? v.strip : nil }
    number = lambda do |*names|
      names.each do |name|
        v = get.(name) or next
        next_n = v.match?(U64_TEXT) && v.to_i <= U64 ? v.to_i : nil
        if next_n.nil? && v.match?(F64_TEXT)
          f = v =~ /inf/i ? (v.start_with?('-') ? -Float::INFINITY : Float::INFINITY) : v.sub(/\A\+/, '').to_f
          f = Float::NAN if v =~ /nan/i
          next_n = f >= 0 ? (f >= 2.0**64 ? U64 : f.to_i) : nil
        end
        return next_n if next_n
      end
      nil
    end
    param = lambda do |field, *names|
      return nil unless field
      field.split(/[;,]/).each do |part|
        k, v = part.strip.split('=', 2)
        next if v.nil? || !names.include?(k.strip)
        v = v.strip.gsub(/\A"+|"+\z/, '')
        return v.match?(U64_TEXT) && v.to_i <= U64 ? v.to_i : nil
      end
      nil
    end
    until_epoch = ->(at) { [at * NS - now, 0].max }
    ietf = get.('ratelimit')
    policy = get.('ratelimit-policy')
    remaining = number.('ratelimit-remaining', 'x-ratelimit-remaining') || param.(ietf, 'r', 'remaining')
    limit = number.('ratelimit-limit', 'x-ratelimit-limit') || param.(policy, 'q', 'l') || param.(ietf, 'limit')
    st = status.nil? ? :error : classify(status)
    st = :limited if status == 403 && (number.('x-ratelimit-remaining') == 0 || h.key?('retry-after'))
    wait = retry_after(get, number, now)
    if wait.nil? && st == :limited && number.('x-ratelimit-remaining') == 0
      at = number.('x-ratelimit-reset')
      wait = at && until_epoch.(at)
    end
    q = param.(policy, 'q', 'l')
    w = param.(policy, 'w')
    quota = q && w && w > 0 ? [q, [w * NS, DAY].min] : nil
    reset = (t = param.(ietf, 't', 'reset')) ? t * NS : ((at = number.('x-ratelimit-reset')) && until_epoch.(at))
    Answer.new(st, remaining, limit, wait && [wait, DAY].min, quota, reset && [reset, DAY].min, latency)
  end

  def self.classify(status)
    return :ok if (200..299).cover?(status)
    { 429 => :limited, 503 => :unavailable }.fetch(status, :error)
  end

  # `retry-after-ms` (as Rust's Duration::from_secs_f64 rounds: the exact value, ties to even),
  # else `Retry-After` in whole seconds or as an HTTP date, in nanoseconds.
  def self.retry_after(get, _number, now)
    if (ms = get.('retry-after-ms')) && ms.match?(F64_TEXT) && ms !~ /nan/i
      f = ms =~ /inf/i ? (ms.start_with?('-') ? -1.0 : Float::INFINITY) : ms.sub(/\A\+/, '').to_f
      if f >= 0
        s = f / 1e3
        return s <= 0 ? 0 : (s >= 86_400 ? DAY : (s.to_r * NS).round(half: :even))
      end
    end
    v = get.('retry-after') or return nil
    return v.to_i * NS if v.match?(U64_TEXT) && v.to_i <= U64
    at = Time.httpdate(v) rescue nil
    at && [at.to_i * NS - now, 0].max
  end
end

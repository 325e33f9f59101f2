# fair-share in Ruby with the standard library only. It follows the version of crates/fair-share
# named by FOLLOWS below (what changed from version to version: crates/fair-share/CHANGELOG.md).
# It is held to the crate by the event scripts of ports/scripts/ and the readings of
# ports/answers.json: the same answers at the same times give the same waits, to the nanosecond
# (time is whole nanoseconds inside, the random draws come in the crate's order), and every
# answer is read as the crate reads it. docs/fair-share.md explains the law.
#
# What it reads in an answer (FairShare.read_answer, as the crate's Answer::read with fields.rs and
# when.rs): the IETF fields of every draft (RateLimit-Limit/-Remaining/-Reset, draft-7's RateLimit
# dictionary, draft-8's named RateLimit items, RateLimit-Policy in either form, policies after the
# count in a limit field as Envoy sends them); the separate fields under ratelimit-, x-ratelimit-,
# x-rate-limit- and anthropic-ratelimit-requests-, in that order, each also with the -requests
# suffix; Discord's reset-after (seconds), else a reset told apart by its size (under 1e9 seconds to
# it, from 1e9 an epoch second, from 1e12 an epoch millisecond), a Go-style duration (6m0s) or a
# date; Kong's per-window fields (second to year); without a limit field, used + remaining as the
# limit, else a refill's burst-capacity; Zendesk's bare x-rate-limit as the limit; a bucket's refill
# (replenish-rate a second, or fillrate every interval-seconds, default 1) as its policy's window,
# quota × cost × every / tokens, the quota and the count divided by requested-tokens; else
# tollbooth's duration (seconds or a Go duration) as the window; Shopify's call limit (used/limit)
# as one more limit; retry-after-ms (or x-ms-retry-after-ms), else Retry-After in seconds or as a date, else
# x-ratelimit-retry-after, x-rate-limit-retry-after-seconds or x-retry-in, each read as a reset.
# A date in the HTTP form, RFC 850's or asctime's, or RFC
# 3339's (with a fraction or an offset), each clock field two digits. Of several limits, the binding
# one: the nearest to empty (the smallest share of its quota when every counted limit has one, else
# the smallest count; the later reset on a tie), each count joined to the policy of its name, else
# of its quota, else the only one when the count states no quota; limits of one quota and one count
# are one (Kong's RateLimit-* beside its per-window fields, draft-8's beside the legacy ones), the
# first's values kept (a longer window's, where the two state different ones) and the other's
# filling in what it left out. Epoch resets and dates are read against the wall clock, or the
# answer's Date when the two are more than 2 s apart. A Retry-After on a 2xx is the reset, not a
# wait (one of 0 states nothing); a 429 whose binding limit is the separate fields' spent count waits for its reset when it
# names no wait (GitHub); a 403 with x-ratelimit-remaining: 0 or a Retry-After is a refusal; every
# wait, reset and window is capped at a day. ports/answers.json holds this reading to the crate's
# (ports/README.md).
#
#   law = FairShare.new(5)                          # this process's threads; params as keywords
#   d = law.wait(thread, now)                       # now: seconds on the caller's monotonic clock
#   # d > 0: sleep d, ask again. d == 0: send now (the send is booked), then with the answer:
#   law.observe(thread, now, res.code.to_i, res.to_hash, latency)   # status nil: no answer came
#
# wait_ns / observe_ns take and give whole nanoseconds (what ports/ruby/drive.rb uses).
class FairShare
  FOLLOWS = '0.30.0' # the version of crates/fair-share (its Cargo.toml) this port follows
  NS = 1_000_000_000
  U64 = 2**64 - 1
  # The stated resets pin a bucket's refill once their lowest ceiling is within this factor of
  # their highest lower bound: a bound alone may be half the refill.
  PINNED_RATIO = 1.5
  # Blind to the count: the share of refusals the probe aims for, how hard an answer moves it, a
  # refused thread's cut, and the probe's bounds in R² per second.
  BLIND_REFUSALS = 0.005
  BLIND_ADAPT = 1.0
  BLIND_CUT = 0.3
  BLIND_BELOW_MAX = 10.0 # how far below the quota a rate counts in the climb (R/X)
  BLIND_PROBE_MIN = 1e-6
  BLIND_PROBE_MAX = 1.0
  # A blocked key (a second refusal in a row, blind): the process holds this many spacings 1/x, and
  # this many when a request sent after that hold began is refused too (at most a period).
  BLOCKED_HOLD = 1.0
  BLOCKED_HOLD_AGAIN = 2.0
  DAY = 86_400 * NS
  DEFAULTS = { quota: nil, period: nil, first_spread: 0.0, initial_sleep: nil, reserve: 0.005,
               span: 0.03, crowd: 1000.0, gain: 0.4, window_periods: 1.0, min_samples: 3,
               min_flow: 30.0, drain_windows: 4.0, drain_fill: 1.0 / 12.0, full_level: 0.9,
               full_drain: 1.0, pull_periods: 1.5, pull_max: 0.5, decrease: 0.5,
               retry_jitter: 0.5, jitter: 0.1, increase: 0.00005, error_backoff: 1.0,
               error_backoff_max: 60.0, max_rate: 4.0, reset_resolution: 1.0 }.freeze
  DURATIONS = %i[period first_spread initial_sleep error_backoff error_backoff_max reset_resolution].freeze
  POSITIVE = %i[quota period crowd gain drain_windows full_drain pull_periods error_backoff max_rate
                reset_resolution].freeze
  NON_NEGATIVE = %i[reserve span window_periods drain_fill pull_max retry_jitter increase min_flow
                    full_level].freeze
  Sample = Struct.new(:t, :r)
  ThreadState = Struct.new(:target, :last_send, :jit, :hold, :errors, :pending)
  # An answer as the law reads it (src/exchange.rs's Response): times in nanoseconds, `quota`
  # [limit, window nanoseconds], `status` :ok, :limited, :unavailable or :error.
  Answer = Struct.new(:status, :remaining, :limit, :retry_after, :quota, :reset, :latency)

  module Num # src/time.rs's conversions and Rust's f64 max, min and clamp
    module_function

    def from_secs(s)
      return 0 if s.nan? || s <= 0
      n = s * 1e9
      return U64 if n >= 2.0**64
      whole = n.to_i
      n - whole.to_f >= 0.5 ? whole + 1 : whole
    end

    def secs(n) = n.to_f / 1e9
    def fmax(a, b) = a.nan? ? b : (b.nan? || a >= b ? a : b)
    def fmin(a, b) = a.nan? ? b : (b.nan? || a <= b ? a : b)
    def clamp(v, lo, hi) = v < lo ? lo : (v > hi ? hi : v)
  end
  include Num
  extend Num

  attr_reader :x, :decreases

  # How many threads share this law: the slots an adapter (lib/fair_share/faraday.rb) hands out.
  def threads = @threads.size

  def initialize(threads, random: Random.method(:rand), **params)
    unknown = params.keys - DEFAULTS.keys
    raise ArgumentError, "unknown fair-share parameter: #{unknown.join(', ')}" unless unknown.empty?
    @c = DEFAULTS.merge(params).to_h do |k, v|
      [k, v.nil? ? nil : Float(v, exception: false) || raise(ArgumentError, "fair-share: #{k} must be a number (got #{v.inspect})")]
    end
    @ns = DURATIONS.to_h { |k| [k, @c[k] && duration(k, @c[k])] }
    bad = problems
    raise ArgumentError, "fair-share: #{bad.join('; ')}" unless bad.empty?
    @random = random
    @lock = Mutex.new
    @threads = Array.new([threads.to_i, 1].max) { ThreadState.new(nil, nil, 0.0, 0, 0, false) }
    @limit = @c[:quota] || 4500.0
    @period = @ns[:period] ? secs(@ns[:period]) : 3600.0
    @rate = @limit / @period
    @clock_at = @samples = @decreases = @updates = @sliding_votes = 0
    @clock_phase = @newest_slack = 0.0 # how far the newest reading's count may lie from its t
    # the window's reading the level is read against, what was taken before it, own 429s,
    # its latest reading, and the tokens the refill may have lost to a full bucket
    @win_since = @win_last = nil
    @win_taken = @win_refused = @win_overflow = @win_successes = 0.0
    @from_resets = false # a stated reset bounded the refill: own successes no longer do
    @headers = @full_start = @sliding = @stated_policy = false
    @own = [] # when the server counted own successes over the last period
    @echo = nil # [since, readings, exact, above, level sum]
    @echoed = false # the level echoed own successes: a sliding window, whatever the resets say
    # where no limit is stated: whether one was, the highest count read, the rate the test began at
    @limit_stated = false
    @top = nil
    @x_at_top = 0.0
    @steady_cuts = nil # the cuts at the first reading after the start: none since, the test runs
    # stacked limits: the limit the last success stated; the total's bound from another limit's refusals
    @success_limit = nil
    @other_cap = Float::INFINITY
    x0 = @rate / @threads.size
    x0 = fmin(1.0 / secs(@ns[:initial_sleep]), x0) if @ns[:initial_sleep]
    @x = clamp_rate(x0)
    @probe = @c[:increase] * @rate * @rate # blind to the count: how fast it climbs
    @in_a_row = 0 # blind: refusals since the last success
    @blocked_at = nil # blind: the last hold for a blocked key, in this run of refusals
  end

  # Seconds as Rust's Duration::try_from_secs_f64 takes them: the exact value, ties to even.
  def duration(name, s)
    raise ArgumentError, "fair-share: #{name} must be a number of seconds of 0 or more (got #{s})" unless s.finite? && s >= 0
    (s.to_r * NS).round(half: :even)
  end

  # Every parameter out of its range, as the law's check names it.
  def problems
    v = @c.merge(quota: @c[:quota] || 4500.0, period: @ns[:period] ? secs(@ns[:period]) : 3600.0,
                 error_backoff: secs(@ns[:error_backoff]))
    out = POSITIVE.reject { |k| v[k].finite? && v[k] > 0 }.map { |k| "#{k} must be above 0 (got #{v[k]})" }
    out += NON_NEGATIVE.reject { |k| v[k].finite? && v[k] >= 0 }.map { |k| "#{k} must be 0 or more (got #{v[k]})" }
    out << 'quota and period must be set together' if @c[:quota].nil? != @c[:period].nil?
    [[:reserve, v[:reserve] < 1, 'below 1'], [:pull_max, v[:pull_max] <= 1, 'at most 1'],
     [:gain, v[:gain] <= 1, 'at most 1'], [:decrease, v[:decrease] > 0 && v[:decrease] < 1, 'above 0 and below 1'],
     [:jitter, v[:jitter] >= 0 && v[:jitter] < 1, 'from 0 to below 1'],
     [:min_samples, v[:min_samples] >= 2, 'at least 2'],
     [:error_backoff_max, @ns[:error_backoff_max] >= @ns[:error_backoff], 'at least error_backoff']]
      .each { |k, ok, what| out << "#{k} must be #{what} (got #{v[k]})" unless ok }
    out
  end

  # Seconds to wait before `thread` sends (0.0: send now, the send is booked); `now` in seconds.
  def wait(thread, now) = secs(wait_ns(thread, from_secs(now)))

  # After an answer; `now` and `latency` in seconds, `unix` the wall clock in seconds (GitHub's
  # epoch reset, an HTTP-date Retry-After; default now). Returns the answer's class.
  def observe(thread, now, status, headers, latency, unix = nil)
    observe_ns(thread, from_secs(now), status, headers, from_secs(latency), unix)
  end

  def wait_ns(thread, now)
    return NS unless (0...@threads.size).cover?(thread) # a thread out of range waits a second
    @lock.synchronize do
      delay(now, thread) unless @threads[thread].pending
      acquire(now, thread)
    end
  end

  def observe_ns(thread, now, status, headers, latency, unix = nil)
    answer = FairShare.read_answer(status, headers || [], latency, unix)
    @lock.synchronize { on_response(now, thread, answer) } if (0...@threads.size).cover?(thread)
    answer.status
  end

  private

  def clamp_rate(x) = clamp(x, @rate / @c[:crowd] * 0.01, @c[:max_rate] * @rate)
  def own_reserve = fmin(fmax(@c[:reserve] * @limit, 1.0), @limit * 0.25)
  # At least a quarter of the crowd's swing where the bucket holds it.
  def reserve = holds_crowd? ? fmin(fmax(own_reserve, 0.25 * swing), @limit * 0.25) : own_reserve
  # The middle of the span the turnovers agree on.
  def reset_at = @reset_span && (@reset_span[0] + @reset_span[1]) / 2.0
  def refill = reset_at ? 0.0 : @rate
  def spacing = 1.0 / @x
  def window_secs = @c[:window_periods] / @x / Math.sqrt(@threads.size.to_f)
  def loop_secs = fmax(window_secs, @c[:min_flow] / @rate)
  def min_flow = reset_at ? fmin(@c[:min_flow], @limit * 0.3) : @c[:min_flow]
  def clamp_step(v) = clamp(v, -Math.log(100.0), Math.log(2.0))
  def draw(lo, hi) = lo + @random.call * (hi - lo)
  def price(r) = @rate / @c[:crowd] * Math.exp(fmin((r - reserve) / slope, 50.0))
  def to_reset(t) = reset_at && @period - (t - reset_at) % @period # Ruby's % is rem_euclid here
  def planned(t) = (left = to_reset(t)) ? fmax(@limit - reserve, 0.0) * left / @period : 0.0
  def phase(now) = @clock_phase + secs([now - @clock_at, 0].max) * @x

  def room = room_above(reserve)
  def room_above(reserve) = fmax(@limit - 1.0 - reserve, 0.0) * 0.8 # up to B − 1
  def swing = 2.0 * Math.sqrt(@c[:crowd]) # the level's swing from K senders
  # The room above the configured reserve holds the swing.
  def holds_crowd? = @reset_span.nil? && swing <= room_above(own_reserve)

  def slope
    floor = @reset_span ? 4.0 : (holds_crowd? ? swing : 10.0) # 10 tokens on a bucket
    span = fmax(@c[:span] * @limit, fmin(floor, room))
    fmax(span / Math.log(@c[:crowd]), Float::MIN)
  end

  def target(r, t)
    if (left = to_reset(t))
      res = 0.75 * reserve * fmin(left / @period, 1.0) # three quarters of the reserve
      # past the reset, the allowances that follow; over at least the reset's uncertainty
      h = fmax(fmax(left, window_secs), fmin(2.5 * secs(@ns[:reset_resolution]), 0.5 * @period))
      later = @limit * (h - left) / @period # whole
      return fmin(fmax((r + 1.0 - res + later) / h, @rate * 0.05), @other_cap)
    end
    surplus = (r - reserve) / fmax(@c[:drain_fill] * @limit / @rate, @c[:drain_windows] * loop_secs)
    surplus = fmin(surplus, @c[:full_drain] * @rate) if @full_start
    fmin(fmax(@rate + surplus, @rate * 0.25), @other_cap) # under another limit's bound
  end

  def set_rate(now, x)
    now = [now, @clock_at].max
    @clock_phase = phase(now)
    @clock_at = now
    @x = clamp_rate(x)
  end

  def apply_window(now, first, last)
    dt = last.t - first.t
    return apply_sliding_window(now, first, last, dt) if @sliding
    since = @win_since
    refused = @reset_span ? @win_refused : 0.0 # requests a spent window's level cannot show
    # what the bucket lost to overflowing counts as refilled and taken by nobody
    overflow = @reset_span ? 0.0 : @win_overflow
    total = fmax(refill - (last.r - since.r - @win_taken - refused + overflow) / dt, @rate * 0.02)
    target = target((since.r + last.r) / 2.0, (since.t + last.t) / 2.0)
    # a first window that reads a flood cuts straight to the target
    flood = @updates.zero? && !@full_start && @reset_span.nil? && total > 4.0 * target
    ln_x = Math.log(@x) + (flood ? 1.0 : @c[:gain]) * clamp_step(Math.log(target / total))
    n = @threads.size.to_f
    # the whole total: a full bucket of unproven refill doubles it, then own successes bound R
    alone = n * @x >= (1.0 - 0.1) * total
    ln_x = fmax(ln_x, Math.log(@x) + Math.log(2.0)) if alone && overflowing?(first, last)
    price = price(last.r - planned(last.t))
    periods = @reset_span ? 4.0 : @c[:pull_periods] # a fixed window's pull is slower
    pull = fmin(slope / (periods * fmax(total / fmax(@x, price), n)), @c[:pull_max])
    share = clamp(n * @x / total, 0.0, 1.0)
    pull = if holds_crowd? # room for a crowd's swing, a lone process keeps half its pull
             pull * (1.0 - 0.5 * share)
           else
             pull * (1.0 - share) * fmin((1.0 - share) / 0.1, 1.0) # a lone process's fades
           end
    cap = @full_start ? target * @x / total : target
    ln_x += pull * fmax(Math.log(fmin(price, cap)) - ln_x, -Math.log(100.0))
    set_rate(now, Math.exp(ln_x))
    learn_refill_from_successes(now, first, last) if alone
  end

  # A stated reset bounded the refill, and the ceiling they put on it lies within PINNED_RATIO
  # of that bound.
  def refill_pinned?
    @from_resets && !@refill_ceiling.nil? && !@refill_bound.nil? && @refill_ceiling <= PINNED_RATIO * @refill_bound
  end

  # A bucket's refill that nothing states, tells or bounds from its resets, past the first window.
  def refill_unproven?
    @c[:quota].nil? && @policy.nil? && !refill_pinned? && !@no_bucket && @reset_span.nil? && @updates.positive?
  end

  # R*dt >= own successes + the level's rise over the window (others only take more), the count
  # rounded down; from windows whose level rose by at most 1, so never above the own rate.
  def learn_refill_from_successes(now, first, last)
    dt, rise = last.t - first.t, last.r - first.r
    return if !refill_unproven? || dt <= 0.0 || rise > 1.0
    bound = (@win_successes + rise - 1.0) / dt
    return if bound <= @rate || (@refill_ceiling && bound > @refill_ceiling)
    @refill_bound = bound
    move_refill(now, bound, @limit / bound)
  end

  # Full at both ends of the window, own successes and no refusal: the refill is more than taken.
  def overflowing?(first, last)
    top = @limit - 1.0
    refill_unproven? && @limit > 2.0 && @win_successes > 0.0 && @win_refused.zero? &&
      first.r >= top && last.r >= top
  end

  def apply_sliding_window(now, first, last, dt)
    average = (@limit - (first.r + last.r) / 2.0) / @period
    fall = (first.r - last.r) / dt
    total = fmax(fmax(average, fall), @rate * 0.02)
    gain = fall > average ? @c[:gain] : @c[:gain] * fmin(1.0 * dt / @period, 1.0)
    set_rate(now, Math.exp(Math.log(@x) + gain * clamp_step(Math.log(fmin(@limit / @period, @other_cap) / total))))
  end

  # A stated reset's rounding: the header's second, or 0.02 of the period if more.
  def reset_slack = fmax(@period * 0.02, secs(@ns[:reset_resolution]))

  def read_reset(t, stated, r)
    return forget_sliding if reset_at || !knows_quota?
    slack = reset_slack
    if stated >= @period - slack && stated > fmax(@limit - r, 0.0) / @rate + 1.5 * slack
      @sliding_since ||= t
      @sliding_votes += 1
      @sliding = true if @sliding_votes >= 3 && t - @sliding_since > 2.0 * slack
    elsif stated < @period - 1.5 * slack
      forget_sliding
    end
  end

  # No limit stated: a level that cutting the rate to a quarter cannot raise is the bucket's top.
  def read_top(r, refused)
    return if @limit_stated

    if @top && r <= @top && r + 1.0 >= @top && !refused
      if @steady_cuts.nil? && @updates.positive?
        # The first reading after the start: a process cut in the start's flood tests from now.
        @steady_cuts = @decreases
        if @decreases.positive?
          @x_at_top = @x
          return
        end
      end
      uncut = @decreases.zero? || @steady_cuts == @decreases
      if uncut && @top >= 1.0 && @top + 1.0 < @limit && @x < @x_at_top / 4.0
        @limit = @top + 1.0
        @x_at_top = @x
      end
    else
      @top = @top ? [@top, r].max : r
      @x_at_top = @x
    end
  end

  # Alone on a window too short for its stated resets to tell, r + own = B on every success
  # says a sliding window (own: the process's successes counted in the last period); a bucket
  # refills between them, and reads above B once a token came back since the success before.
  def read_echo(t, r)
    if !knows_quota?
      @own = []
      @echo = nil
      return
    end
    start = t - @period
    @own.shift while !@own.empty? && (@own[0] <= start || @own.size > 2.0 * @limit)
    at = @own.bsearch_index { |s| s > t } || @own.size
    before = at.positive? ? @own[at - 1] : nil
    @own.insert(at, t)
    return if before.nil? || t - before < 1.0 / @rate
    e = r + (at + 1) - @limit
    @echo ||= [t, 0, 0, 0, 0.0]
    @echo[1] += 1
    @echo[4] += r
    if e.abs < 0.5
      @echo[2] += 1
    elsif e > 0.0
      @echo[3] += 1
    end
    return unless t - @echo[0] >= 4.0 * @period && @echo[1] >= 30
    if @echo[2] >= 0.95 * @echo[1] && @echo[4] / @echo[1] >= 0.1 * @limit + 1.0
      @reset_span = nil # a turnover seen was a burst's echo
      @sliding = @echoed = true # whatever the stated resets say from now on
    elsif 2 * @echo[3] >= @echo[1]
      @sliding = @echoed = false
    end
    @echo = [t, 0, 0, 0, 0.0]
  end

  # A fixed window states its end, the same instant on every answer until it turns over,
  # while its count falls (a bucket's end moves on as it is used, a sliding window's is a period
  # after its newest request). Two successes more than two resolutions apart that state the same
  # end (within a resolution), the count lower at the second, place its reset at once.
  # On a fixed window every success of one window states its end within a resolution and the
  # answer's latency, and the next window's a period later: an end that drifts further (than a
  # resolution and the larger latency of the two answers), not by whole periods, without a
  # turnover of the level, is a sliding-window counter's or a sliding log's.
  def read_end_drift(t, stated, latency)
    return @fixed_end = nil unless reset_at
    end_at = t + stated
    return @fixed_end = [end_at, latency] unless @fixed_end
    drift = (end_at - @fixed_end[0]).abs
    res = secs(@ns[:reset_resolution])
    slack = res + fmax(latency, @fixed_end[1]) + 1e-6
    return if drift <= slack
    if @period > 4.0 * res && (drift - (drift / @period).round * @period).abs <= slack
      @fixed_end = [end_at, latency]
    else
      @reset_span = nil
      @fixed_end = nil
      @end_drifted = true # stated ends place no fixed window again
    end
  end

  def read_fixed_end(t, stated, r, apart)
    return @stated_end = nil if reset_at || @end_drifted
    same = secs(@ns[:reset_resolution])
    end_at = t + stated
    unless @stated_end && (end_at - @stated_end[0]).abs <= same
      return @stated_end = [end_at, Sample.new(t, r)] # [end, the first success that stated it]
    end
    first_end, first = @stated_end
    return unless r < first.r && t - first.t > apart
    unless knows_quota? # no period to place it by, but no bucket's end stays put while r falls
      @no_bucket = true
      return @stated_end = nil
    end
    # A fixed window's end is never more than a period away (a sliding-window counter's can be).
    return unless first_end - first.t <= @period + same
    place_reset(first_end - same, first_end) # a stated end is rounded up to the resolution
    place_reset(end_at - same, end_at)
    @stated_end = nil
    @full_start = @sliding = false
    @window = nil
    @samples = 0
  end

  # A fixed window turned over between lo and hi. Its resets are a period apart: the span
  # kept so far, shifted by whole periods, is cut to this one (or replaced, if they do not meet),
  # and the reset is its middle.
  # A success sent at t stated its window's end `stated` seconds on (counted no sooner),
  # rounded up: the window closes no sooner than stated - resolution. A reset predicted sooner
  # moves on to that (a window opened by its key's first request turns over later each period
  # than predicted).
  def read_stated_end(t, stated)
    left = to_reset(t) or return
    res = secs(@ns[:reset_resolution])
    least = stated - res
    return unless stated <= @period + res && left < least

    later = least - left
    @reset_span = [@reset_span[0] + later, @reset_span[1] + later]
  end

  # A fixed window's allowance read spent (a count of 0): every thread waits for its stated end,
  # less the end's rounding.
  def hold_spent_window(now, sent, stated)
    sure = stated - secs(@ns[:reset_resolution])
    hold_process(now, sent + from_secs(sure)) if @reset_span && sure > 0.0
  end

  def place_reset(lo, hi)
    span = [lo, hi]
    if @reset_span
      a, b = @reset_span
      shift = (((lo + hi) - (a + b)) / 2.0 / @period).round * @period # Float#round: half away from 0
      from, to = fmax(lo, a + shift), fmin(hi, b + shift)
      span = [from, to] if from <= to
    end
    @reset_span = span
  end

  # A stated reset says no sliding window, unless the level's echo said one.
  def forget_sliding
    @sliding, @sliding_votes, @sliding_since = @sliding && @echoed, 0, nil
  end

  def open_window(s)
    @window, @samples, @win_since, @win_taken, @win_refused = s, 1, s, 0.0, 0.0
    @win_last = s
    @win_overflow = @win_successes = 0.0
  end

  # A window of the law carries on across a fixed window's turnover.
  def carry_window(newest, s)
    return open_window(s) unless @window
    left = to_reset(newest.t)
    turnover = left && newest.t + left <= s.t + 1e-9 # the reset placed falls between the two
    @win_taken += fmax(@win_since.r - newest.r, 0.0) # the level's fall up to the turnover
    @win_taken += fmax(@limit - s.r, 0.0) if turnover # what the new allowance lost before s
    @win_since = s
  end

  def observe_level(now, t, r)
    s = Sample.new(t, r)
    if @newest.nil? && r >= @c[:full_level] * @limit then @full_start = true
    elsif r <= reserve + slope * Math.log(@c[:crowd]) then @full_start = false
    end
    slack = fmax(secs(now) - t, 0.0) # counted at t give or take this (half the latency)
    if @newest && t >= @newest.t
      # on a sliding window a jump is requests leaving it a period after they were sent
      if !@sliding && r > @newest.r + refill * (t - @newest.t + slack + @newest_slack) + fmax(@limit * 0.1, 2.0)
        newest = @newest
        place_reset(newest.t, t) # a fixed window turned over between the two readings
        @fixed_end = nil
        @full_start = false
        @newest = s
        @newest_slack = slack
        return carry_window(newest, s)
      end
      @reset_span = nil if reset_at && r > @newest.r + 2.0
    end
    if @newest.nil? || t >= @newest.t
      @newest = s
      @newest_slack = slack
    end
    return open_window(s) unless (first = @window)
    @samples += 1
    limit, rate = @limit, refill
    if t > @win_last.t
      # A reading at the top (B − 1, the request just counted) found the bucket full: since the
      # reading before it refilled from that level, then overflowed for at most the time left
      # over (others' requests only shorten it; for a process alone it is exact).
      if r >= limit - 1.0 && rate > 0.0
        fill = fmax(limit - @win_last.r, 0.0) / rate
        @win_overflow += fmax((t - @win_last.t) - fill, 0.0) * rate
      end
      @win_last = s
    end
    flow = @rate * (t - first.t) - (r - @win_since.r) + @win_taken
    return unless t - first.t >= window_secs * (@updates.zero? ? 0.7 : 1.0) && @samples >= @c[:min_samples] &&
                  flow >= min_flow
    apply_window(now, first, s)
    @updates += 1
    open_window(s)
  end

  def take_policy(now, quota, limit_from_quota)
    return if @policy == quota
    @policy = quota
    @limit = quota[0].to_f if limit_from_quota
    move_refill(now, quota[0].to_f * 1e9 / quota[1].to_f, secs(quota[1]))
  end

  # R and the period are now `rate` and `period`: the per-thread rate moves with R.
  def move_refill(now, rate, period)
    scale = rate / @rate
    @rate = rate
    @period = period
    set_rate(now, @x * scale)
  end

  # Stated, given, or learned from the stated resets.
  def knows_quota? = !@policy.nil? || !@c[:quota].nil? || !@refill_bound.nil?

  # Without a policy, a bucket is whole again (B - r)/R after the answer and a sliding
  # window a period B/R after its newest request, so an answer whose stated end moved since the
  # last one bounds the refill from below: R >= (B - r - 1)/reset. The refill is the largest.
  def learn_refill(now, stated, r)
    return if @c[:quota] || @policy
    @longest_reset = fmax(@longest_reset || 0.0, stated)
    @no_bucket ||= !@reset_span.nil? # a fixed window's turnover says no bucket too
    return refill_from_longest_reset(now) if @no_bucket
    t = secs(now)
    end_at = t + stated
    res = secs(@ns[:reset_resolution])
    if stated > res # a bucket's reset is rounded up by less than a resolution
      ceiling = (@limit - r + 1.0) / (stated - res)
      @refill_ceiling = @refill_ceiling ? fmin(@refill_ceiling, ceiling) : ceiling
    end
    last = @moving_end
    # An end that moved, or a count that rose (a bucket filling), is no fixed window's.
    moved = last && t > last[1] && ((end_at - last[0]).abs > res || r > last[3] + 1.0)
    @moving_end = [end_at, t, stated, r]
    return if !moved || stated <= 0.0
    bound = (@limit - r - 1.0) / stated
    # One reset at levels further apart than a bucket's refill explains is a sliding
    # window's (a period at any level): its refill is B/reset.
    if stated > 2.0 * res && (stated - last[2]).abs <= res
      bucket_rate_at_most = (@limit - [r, last[3]].min + 1.0) / (stated - res)
      bound = [bound, @limit / stated].max if (r - last[3]).abs > 2.0 * res * bucket_rate_at_most + 1.0
    end
    too_slow = bound.positive? && @limit / bound > 7.0 * 86_400.0 # no bucket takes a week to fill
    if too_slow || (@refill_ceiling && bound > @refill_ceiling) # no bucket says this
      @no_bucket = true
      return refill_from_longest_reset(now)
    end
    return unless bound > (@refill_bound || 0.0)
    @refill_bound, @from_resets = bound, true
    move_refill(now, bound, @limit / bound)
  end

  # B over the longest reset stated, the window's period from below.
  def refill_from_longest_reset(now)
    return if @longest_reset <= 0.0
    rate = @limit / @longest_reset
    return if @refill_bound == rate
    @refill_bound = rate
    move_refill(now, rate, @longest_reset)
  end

  # Without a stated or given quota, a fixed window's period from its stated reset (its
  # end, the same on every answer until it turns over): two ends in a row, each stated alike
  # (within the header's resolution, `reset_resolution`) for more than two resolutions, with the
  # level's turnover at the first, are a period apart.
  def read_period(now, stated)
    return if @c[:quota] || @stated_policy
    t = secs(now)
    same = secs(@ns[:reset_resolution])
    stated_end = t + stated
    cur = @window_end
    if cur.nil? || (stated_end - cur[0]).abs > same
      @last_end = cur && cur[3] - cur[2] > 2.0 * same ? cur[1] : nil if cur
      # [end as first stated, the earliest stated, since, seen]
      return @window_end = [stated_end, stated_end, t, t]
    end
    cur[1] = [cur[1], stated_end].min # seconds to go are rounded at each answer's phase
    cur[3] = t
    return unless @last_end && cur[3] - cur[2] > 2.0 * same
    read = (cur[1] - @last_end).round.to_f # f64::round: halves away from zero, as Ruby's
    if @period_read && @period_read[0] == cur[0] # read again as the end narrows
      @period_read = [cur[0], read]
    else # a new end read: keep the one before
      @period_before = @period_read && @period_read[1]
      @period_read = [cur[0], read]
    end
    # Ends read further apart than a period now and then (a window opened late, an epoch
    # second rounded up): the shorter of the last two.
    period = @period_before ? [read, @period_before].min : read
    turned_over = reset_at && (reset_at - @last_end).abs <= 0.1 * period + same
    # Never shorter than an end stated alike takes: two ends closer are one end, rounded.
    shortest = [2.0 * same, 1.0].max
    take_policy(now, [clamp(@limit, 0, U64).to_i, (period * NS).to_i], false) if turned_over && period >= shortest && period <= 86_400
  end

  def delay(now, thread)
    th = @threads[thread]
    unless th.target
      unless @offset
        @offset = draw(0.0, 1.0) # once per process, the first wait of any thread
        @clock_at, @clock_phase = now, 0.0
      end
      th.target = (thread + @offset) / @threads.size * fmax(secs(@ns[:first_spread]) * @x, 1.0)
    end
    # Scaled to what the bucket tolerates: a bucket of one token lets no send come early (the
    # draw is made all the same, so the order of the draws does not depend on the bucket).
    fits = clamp(@limit - 1.0, 0.0, 1.0)
    th.jit = @c[:jitter] <= 0 ? 0.0 : draw(-@c[:jitter], @c[:jitter]) * fits / @threads.size
    th.pending = true
  end

  # The key is empty until `till` for every thread, not only the one refused: the phase stops
  # until then, so the threads resume in their order, one spacing apart.
  def hold_process(now, till)
    return unless till > [@clock_at, now].max
    @clock_phase = phase(now)
    @clock_at = till
  end

  # d later than the reset predicted, on the period's circle (a reset predicted a moment ago is
  # the next one's), within the prediction's uncertainty, or a resolution more (rounded up).
  def near_reset?(d)
    lo, hi = @reset_span
    within = 0.1 * @period + (hi - lo) / 2.0
    (d + within) % @period - within <= secs(@ns[:reset_resolution]) + within # % is rem_euclid here
  end

  def acquire(now, thread)
    th = @threads[thread]
    left = th.target ? from_secs(fmax(th.target + th.jit - phase(now), 0.0) / @x) : 0
    left = [left, [from_secs(spacing / 8.0), 1].max].min # looked at again every eighth of a period
    # and a hold waited out whole: the thread's, or the process's phase stopped by a refusal
    left = [left, [th.hold, @clock_at].max - now].max
    return left unless left.zero?
    ph = phase(now)
    nxt = (th.target || ph) + 1.0
    nxt += (ph + 0.5 - nxt).ceil.to_f if nxt < ph + 0.5
    th.target, th.last_send, th.pending = nxt, now, false
    0
  end

  # A refusal stating another limit than the last success's bounds the key's total rate by
  # L / (T - resolution), T the later of its reset and Retry-After, where T exceeds two
  # resolutions, and leaves the bucket; any other stated limit is the bucket.
  def take_stated_limit(a)
    @limit_stated = true
    limit = a.limit.to_f
    if a.status == :limited && @success_limit && @success_limit != limit
      res = secs(@ns[:reset_resolution])
      wait = fmax(a.reset ? secs(a.reset) : 0.0, a.retry_after ? secs(a.retry_after) : 0.0)
      @other_cap = fmin(@other_cap, limit / (wait - res)) if wait > 2.0 * res
      return
    end
    @limit = limit
    @success_limit = limit if a.status == :ok
  end

  def on_response(now, thread, a)
    q = a.quota && a.quota[0].to_f * 1e9 / a.quota[1].to_f > 0 ? a.quota : nil
    @stated_policy ||= !q.nil?
    take_policy(now, q, a.limit.nil?) if @c[:quota].nil? && q
    if a.limit&.positive?
      take_stated_limit(a)
    elsif a.remaining && a.remaining.to_f >= @limit
      @limit = a.remaining.to_f + 1.0 # the bucket held what is left and this request
    end
    th = @threads[thread]
    sent = th.last_send || now
    counted = [now - a.latency / 2, 0, sent].max # a refusal's reset counts from the last let in
    if a.remaining && %i[ok limited].include?(a.status)
      @headers = true
      if a.reset && a.status == :ok
        read_reset(secs(now), secs(a.reset), a.remaining.to_f)
        read_fixed_end(secs(counted), secs(a.reset), a.remaining.to_f, 2.0 * secs(@ns[:reset_resolution]))
      elsif a.reset && a.retry_after && a.status == :limited # a window's end, far off
        res = secs(@ns[:reset_resolution])
        if secs(a.reset) > 2.0 * res && (secs(a.reset) - secs(a.retry_after)).abs <= res
          read_fixed_end(secs(counted), secs(a.reset), a.remaining.to_f, res)
        end
      end
      read_echo(secs(counted), a.remaining.to_f) if a.status == :ok
      read_top(a.remaining.to_f, a.status == :limited)
      observe_level(now, secs(counted), a.remaining.to_f)
      if a.reset && a.status == :ok
        read_end_drift(secs(now), secs(a.reset), secs(a.latency))
        read_period(now, secs(a.reset))
        learn_refill(now, secs(a.reset), a.remaining.to_f)
        read_stated_end(secs(sent), secs(a.reset)) # from the send: counted no sooner
        # a fixed window's allowance read spent: the key is empty to its stated end
        hold_spent_window(now, sent, secs(a.reset)) if a.remaining.zero?
      end
    end
    case a.status
    when :ok
      th.errors = 0
      # a token the refill gave, read after the window's first reading
      @win_successes += 1.0 if a.remaining && @window && secs(counted) > @window.t
      unless @headers # blind to the count: climb by the probe, faster below the quota
        since = @last_increase ? secs(now - [@last_increase, now].min) : 0.0
        @last_increase = now
        n = @threads.size.to_f
        own = n * @x
        below = fmin(@rate / own, BLIND_BELOW_MAX)
        set_rate(now, fmin((own + @probe * below * below * since) / n, @rate / n))
        @probe = fmin(@probe * Math.exp(BLIND_ADAPT * BLIND_REFUSALS), @rate * @rate * BLIND_PROBE_MAX)
        @in_a_row = 0
        @blocked_at = nil
      end
    when :limited
      @win_refused += 1.0 if @window # a request a spent window's level cannot show
      th.errors = 0
      period = from_secs(spacing)
      left = to_reset(secs(now))
      spent = @period * @x * @threads.size >= 4.0 && a.retry_after && left &&
              near_reset?(secs(a.retry_after) - left)
      if !@headers # blind to the count: the refused thread is one of n, cut to BLIND_CUT
        @in_a_row += 1
        set_rate(now, @x * Math.exp(Math.log(BLIND_CUT) / @threads.size))
        # once held for a blocked key, a refusal leaves the probe
        @probe = fmax(@probe * Math.exp(-BLIND_ADAPT * (1.0 - BLIND_REFUSALS)), @rate * @rate * BLIND_PROBE_MIN) if @blocked_at.nil?
        @last_increase = @last_decrease = now
        @decreases += 1
        if @in_a_row >= 2 # a blocked key: the whole process holds
          # a refusal of a request sent before the last hold says nothing new
          k = if @blocked_at.nil? then BLOCKED_HOLD
              elsif sent >= @blocked_at then BLOCKED_HOLD_AGAIN
              end
          if k
            @blocked_at = now
            hold_process(now, [now + from_secs(fmin(k / @x, @period)), U64].min)
          end
        end
      elsif !spent && (@last_decrease.nil? || (sent >= @last_decrease && now >= [@last_decrease + period, U64].min))
        per_period = @threads.size * @x * @period
        factor = if @sliding
                   fmax(1.0 - 1.0 / fmax(per_period, 1.0), @c[:decrease])
                 elsif @headers && holds_crowd?
                   if @updates.zero? && @decreases.zero?
                     fmin(@threads.size / swing, @c[:decrease]) # refused before any window, a crowd
                   else
                     Math.exp(Math.log(@c[:decrease]) / @threads.size) # an n-th of a halving per refusal
                   end
                 else
                   @c[:decrease]
                 end
        set_rate(now, @x * factor)
        @last_decrease = now
        @decreases += 1
        @window, @samples = nil, 0
      end
      wait = 0
      if a.retry_after
        ra = secs(a.retry_after)
        stretch = @c[:retry_jitter] > 0 ? draw(0.0, @c[:retry_jitter]) : 0.0
        wait = from_secs(ra + stretch * fmin(ra, spacing))
      end
      th.hold = [now + wait, U64].min
      # the key is surely empty for the Retry-After less its rounding, for every thread (where
      # the predicted reset explains the refusal, to that reset instead)
      if a.retry_after && !spent
        hold_process(now, [now + [a.retry_after - @ns[:reset_resolution], 0].max, U64].min)
      elsif a.retry_after && left
        # spent before the reset: every thread holds to it, where the wait places it closely
        ra, res = secs(a.retry_after), secs(@ns[:reset_resolution])
        if ra > 4.0 * res
          hold_process(now, [now + from_secs(fmax(ra - res, fmin(left, ra))), U64].min)
        end
      end
    else # 503, any other status, no answer: back this thread off, doubling
      base = secs(@ns[:error_backoff]) * 2.0**[th.errors, 30].min
      th.hold = [now + from_secs(fmin(base, secs(@ns[:error_backoff_max]))), U64].min
      th.errors += 1
    end
  end

  # --- Reading an answer: Answer::read of crates/fair-share/src/answer.rs, with fields.rs (the
  # list grammar) and when.rs (the times). Durations are whole nanoseconds, DMAX Rust's
  # Duration::MAX; a count is an Integer up to U64.
  module Reading
    module_function

    DMAX = U64 * NS + NS - 1
    CLOCK_SKEW = 2 * NS # how far the answer's Date may be from the wall clock before it is the clock
    SEPARATE = %w[ratelimit- x-ratelimit- x-rate-limit- anthropic-ratelimit-requests-].freeze # in the order taken
    # The wait under other names, where Retry-After is absent or unreadable.
    RETRY_AFTER_ALIASES = %w[x-ratelimit-retry-after x-rate-limit-retry-after-seconds x-retry-in].freeze
    # Kong's X-RateLimit-Remaining-Minute and its kin: the window of each suffix, in seconds.
    WINDOW_SUFFIXES = [['second', 1], ['minute', 60], ['hour', 3600], ['day', 86_400], ['month', 30 * 86_400],
                       ['year', 365 * 86_400]].freeze
    SPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/ # char::is_whitespace
    TRIM = /\A#{SPACE}+|#{SPACE}+\z/
    UINT = /\A\+?[0-9]+\z/
    INT = /\A[+-]?[0-9]+\z/
    FLOAT = /\A([+-]?)(?:(inf|infinity)|(nan)|([0-9]*)(?:\.([0-9]*))?(?:e([+-]?[0-9]+))?)\z/i
    DURATION = /\G([0-9.]+)([^0-9.]+)/ # a number and its unit, `6m` of `6m0s`
    DECIMAL = /\A(?:[0-9]+\.?[0-9]*|\.[0-9]+)\z/
    TWO_DIGITS = /\A[0-9]{2}\z/
    DIGITS = /\A[0-9]+\z/
    UNITS = { 'h' => 3600.0, 'm' => 60.0, 's' => 1.0, 'ms' => 1e-3, 'us' => 1e-6, "\u00b5s" => 1e-6,
              'ns' => 1e-9 }.freeze
    MONTHS = %w[Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec].freeze
    # One limit an answer speaks of.
    Stated = Struct.new(:name, :quota, :window, :remaining, :reset, :separate)
    Member = Struct.new(:name, :number, :params)

    def stated(**kw) = Stated.new(nil, nil, nil, nil, nil, false).tap { |s| kw.each { |k, v| s[k] = v } }
    def trim(v) = v.gsub(TRIM, '')
    def lower(v) = v.tr('A-Z', 'a-z') # eq_ignore_ascii_case

    # Header text as Rust's &str: UTF-8 (an invalid byte read as U+FFFD).
    def text(v)
      v = v.to_s
      v = v.dup.force_encoding(Encoding::UTF_8) unless v.encoding == Encoding::UTF_8
      v.valid_encoding? ? v : v.scrub
    end

    # str::parse::<i64> (or ::<u64> with UINT, 0, U64).
    def int(v, re = INT, lo = -2**63, hi = 2**63 - 1)
      return nil unless v.match?(re)
      n = v.to_i
      n.between?(lo, hi) ? n : nil
    end

    # fields.rs number: a non-negative f64 as Rust parses it (inf too); NaN says nothing.
    def number(v)
      v = trim(v)
      return nil unless v.ascii_only? && (m = FLOAT.match(v))
      sign, inf, nan, whole, frac, exp = m.captures
      frac = frac.to_s
      return nil if nan || (!inf && whole.empty? && frac.empty?)
      f = inf ? Float::INFINITY : decimal(whole, frac, exp.to_i)
      f = -f if sign == '-'
      f >= 0 ? f : nil
    end

    # The double nearest whole.frac × 10^exp; past a double's range read without String#to_f,
    # which warns there.
    def decimal(whole, frac, exp)
      lead = (whole + frac).index(/[1-9]/)
      return 0.0 if lead.nil?
      magnitude = exp + whole.length - lead # the value is below 10^magnitude, at least a tenth of it
      return Float::INFINITY if magnitude > 309
      return 0.0 if magnitude < -324
      "#{whole.empty? ? '0' : whole}.#{frac.empty? ? '0' : frac}e#{exp}".to_f
    end

    def as_u64(f) = f >= 2.0**64 ? U64 : f.to_i # `f as u64`, f >= 0

    # fields.rs count: a whole number, or a non-negative decimal cut to its whole part.
    def count(v)
      v = trim(v)
      int(v, UINT, 0, U64) || ((f = number(v)) && as_u64(f))
    end

    # split_outside_quotes: `text` cut at every `sep` not inside double quotes.
    def split(text, sep)
      out, start, quoted, escaped = [], 0, false, false
      text.each_char.with_index do |c, i|
        if escaped then escaped = false
        elsif c == '\\' && quoted then escaped = true
        elsif c == '"' then quoted = !quoted
        elsif c == sep && !quoted
          out << text[start...i]
          start = i + 1
        end
      end
      out << text[start..]
    end

    def unquote(v) = v.length >= 2 && v.start_with?('"') && v.end_with?('"') ? v[1...-1] : v

    # `key=value`: the key in lower case, the value unquoted.
    def pair(piece)
      k, v = piece.split('=', 2)
      return nil if v.nil? || (k = lower(trim(k))).empty?
      [k, unquote(trim(v))]
    end

    # fields.rs members: each a head (name or number) and its parameters; a field whose members
    # are `key=value` (draft-7's dictionary, `r=42;t=7`) is one member of every pair.
    def members(field)
      parts = split(field, ',')
      if parts.any? { |p| split(p, ';').first.include?('=') }
        return [Member.new(nil, nil, parts.flat_map { |p| split(p, ';').filter_map { |piece| pair(piece) } })]
      end
      parts.reject { |p| trim(p).empty? }.map do |part|
        head, *pieces = split(part, ';')
        head = trim(head)
        m = Member.new(nil, nil, pieces.filter_map { |piece| pair(piece) })
        if head.start_with?('"') then m.name = unquote(head)
        elsif (n = number(head)) then m.number = n
        elsif !head.empty? then m.name = head
        end
        m
      end
    end

    # The first parameter named any of `keys`, in the order of `keys`.
    def param(m, *keys)
      keys.each { |k| m.params.each { |name, v| return v if name == k } }
      nil
    end

    # when.rs seconds: Duration::try_from_secs_f64 (the nearest nanosecond, ties to even), else MAX.
    def seconds(s) = s < 2.0**64 ? (s.to_r * NS).round(half: :even) : DMAX

    # From `now` to the epoch second `at`, 0 once passed (past SystemTime's range: MAX).
    def until_epoch(at, now)
      d = seconds(at)
      d >= 2**63 * NS ? DMAX : [d - now, 0].max
    end

    # `6m0s`, `1.5s`, `20ms`: numbers each followed by h, m, s, ms, us, µs or ns.
    def go_duration(v)
      return nil if v.empty?
      total, at = 0.0, 0
      while at < v.length
        m = DURATION.match(v, at)
        return nil unless m && m[1].match?(DECIMAL) && UNITS.key?(m[2])
        whole, frac = m[1].split('.', 2)
        total += decimal(whole, frac.to_s, 0) * UNITS[m[2]]
        at = m.end(0)
      end
      total.finite? ? seconds(total) : nil
    end

    # when.rs span: seconds, or a Go duration (tollbooth's X-Rate-Limit-Duration).
    def span(value)
      v = trim(value)
      (x = number(v)) ? seconds(x) : go_duration(v)
    end

    def month(m) = (i = MONTHS.index(m)) && i + 1

    # when.rs civil: a civil date and an `hh:mm:ss` clock (UTC, each part exactly two digits), plus
    # `fraction` nanoseconds, as Unix nanoseconds, or nil.
    def civil(year, month, day, clock, fraction = 0)
      hms = clock.split(':', -1)
      return nil unless year && month && day && hms.size == 3 && hms.all? { |x| x.match?(TWO_DIGITS) }
      h, m, s = hms.map(&:to_i)
      return nil unless month.between?(1, 12) && day.between?(1, 31) && h <= 23 && m <= 59 && s <= 60 &&
                        year.between?(1970, 9999)
      y, mo = month <= 2 ? [year - 1, month + 9] : [year, month - 3] # days from a civil date
      era = y.div(400)
      yoe = y - era * 400
      doe = yoe * 365 + yoe / 4 - yoe / 100 + (153 * mo + 2) / 5 + day - 1
      ((era * 146_097 + doe - 719_468) * 86_400 + h * 3600 + m * 60 + s) * NS + fraction
    end

    # `Sun, 06 Nov 1994 08:49:37 GMT`, its parts split at ASCII white space.
    def imf_date(p) = p.size == 6 && p[5] == 'GMT' ? civil(int(p[3]), month(p[2]), int(p[1]), p[4]) : nil

    # `Sunday, 06-Nov-94 08:49:37 GMT`: a two-digit year is the one within 50 years of 2000.
    def rfc850_date(p)
      dmy = p.size == 4 && p[3] == 'GMT' ? p[1].split('-', -1) : []
      return nil unless dmy.size >= 3 && (year = int(dmy[2]))
      year = year < 50 ? 2000 + year : year < 100 ? 1900 + year : year
      civil(year, month(dmy[1]), int(dmy[0]), p[2])
    end

    # `Sun Nov  6 08:49:37 1994`.
    def asctime_date(p) = p.size == 5 ? civil(int(p[4]), month(p[1]), int(p[2]), p[3]) : nil

    # `1994-11-06T08:49:37Z`, `1994-11-06T08:49:37.25+01:00`.
    def rfc3339(v)
      return nil unless (at = v.index(/[Tt ]/))
      date, rest = v[0...at], v[at + 1..]
      ymd = date.split('-', -1)
      return nil unless ymd.size == 3
      if rest.end_with?('Z', 'z')
        clock, offset = rest[0...-1], 0
      else
        return nil unless (at = rest.rindex(/[+-]/))
        clock, zone = rest[0...at], rest[at..]
        oh, colon, om = zone[1..].partition(':')
        oh, om = int(oh), int(om)
        return nil unless !colon.empty? && oh&.between?(0, 23) && om&.between?(0, 59)
        offset = (zone.start_with?('-') ? -1 : 1) * (oh * 3600 + om * 60)
      end
      whole, dot, f = clock.partition('.')
      return nil unless dot.empty? || f.match?(DIGITS)
      local = civil(int(ymd[0]), int(ymd[1]), int(ymd[2]), whole, dot.empty? ? 0 : seconds(decimal('0', f, 0)))
      local && local - offset * NS
    end

    # when.rs http_date: a date in any form a server writes one, as Unix nanoseconds, or nil: the
    # HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`), RFC 850's and asctime's (`Sunday, 06-Nov-94
    # 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994`), or RFC 3339 (`1994-11-06T08:49:37Z`, with a
    # fraction or an offset).
    def date_ns(v)
      v = trim(v)
      p = v.split(/[ \t\n\f\r]+/).reject(&:empty?) # split_ascii_whitespace
      imf_date(p) || rfc850_date(p) || asctime_date(p) || rfc3339(v)
    end

    # A date in any form date_ns reads, as Unix seconds (an Integer; a Rational where RFC 3339
    # states a fraction of a second), or nil.
    def http_date(v) = (ns = date_ns(v)) && (ns % NS == 0 ? ns / NS : Rational(ns, NS))

    # when.rs reset: seconds to it, an epoch second or millisecond, a duration, a date.
    def reset(value, now)
      v = trim(value)
      if (x = number(v))
        return x >= 1e12 ? until_epoch(x / 1e3, now) : x >= 1e9 ? until_epoch(x, now) : seconds(x)
      end
      go_duration(v) || ((at = date_ns(v)) && [at - now, 0].max)
    end

    # Retry-After: seconds, whole or not, or an HTTP date (passed: 0).
    def retry_after(value, now)
      (s = number(value)) ? seconds(s) : (at = date_ns(value)) && [at - now, 0].max
    end

    # Status::read: a 403 with x-ratelimit-remaining: 0 or a Retry-After is a refusal.
    def status(code, h)
      return :error if code.nil?
      return :limited if code == 403 && ((v = h['x-ratelimit-remaining']) && count(v) == 0 || h.key?('retry-after'))
      FairShare.classify(code)
    end

    # A member of `RateLimit`: draft-8's `"name";r=…;t=…`, draft-7's `limit=…, remaining=…`.
    def item(m, now)
      stated(name: m.name, quota: (v = param(m, 'limit', 'q', 'l')) && count(v),
             window: (v = param(m, 'w')) && (w = number(v)) && seconds(w),
             remaining: (v = param(m, 'r', 'remaining')) && count(v),
             reset: (v = param(m, 't', 'reset')) && reset(v, now))
    end

    # draft-6/7's `100;w=60` or draft-8's `"name";q=100;w=60`; nil without a quota.
    def policy(m)
      quota = m.number ? as_u64(m.number) : (v = param(m, 'q', 'l', 'limit')) && count(v)
      quota && stated(name: m.name, quota: quota, window: (v = param(m, 'w')) && (w = number(v)) && seconds(w))
    end

    # The separate fields, also with `-requests`; policies in the limit field join `policies`.
    def separate(h, now, policies)
      get = ->(what) { SEPARATE.each { |p| [p + what, "#{p}#{what}-requests"].each { |n| return h[n] if h.key?(n) } } && nil }
      quota = nil
      # Zendesk's bare X-Rate-Limit is the limit.
      members(get.('limit') || h['x-rate-limit'] || '').each do |m|
        if param(m, 'w') then (p = policy(m)) && policies << p
        elsif quota.nil? then quota = m.number && as_u64(m.number)
        end
      end
      r = (v = get.('reset-after')) && (s = number(v)) && seconds(s) # Discord's exact reset-after first
      r ||= (v = get.('reset')) && reset(v, now)
      remaining = (v = get.('remaining')) && count(v)
      # Without a limit field, what was used and what remains make it (Reddit's x-ratelimit-used).
      if quota.nil? && remaining
        used = (v = get.('used')) && count(v)
        quota = used + remaining if used && used + remaining <= U64
      end
      quota ||= (v = get.('burst-capacity')) && count(v) # else the bucket a refill names
      # A request's cost in tokens (Spring Cloud Gateway's requested-tokens): quota and count in requests.
      cost = (v = get.('requested-tokens')) && count(v)
      cost = 1 unless cost && cost > 1
      quota &&= quota / cost
      remaining &&= remaining / cost
      # A bucket refilled at `tokens` every `every` seconds: its window is the time the refill fills
      # it in (Spring Cloud Gateway's replenish-rate a second, Atlassian's fillrate every interval-seconds).
      refill = (v = get.('replenish-rate')) && (t = number(v)) && [t, 1.0]
      if refill.nil? && (v = get.('fillrate')) && (fill = number(v))
        refill = [fill, ((e = get.('interval-seconds')) && number(e)) || 1.0]
      end
      refill = nil unless refill && refill[0] > 0.0 && refill[1] > 0.0
      window = if refill && quota
                 seconds(quota.to_f * cost.to_f * refill[1] / refill[0])
               else
                 (v = get.('duration')) && span(v) # tollbooth's duration, the limit's window
               end
      s = stated(quota: quota, window: window, remaining: remaining, reset: r, separate: true)
      s.quota || s.remaining ? s : nil
    end

    # Shopify's `X-Shopify-Shop-Api-Call-Limit: 32/40`: 32 used of a bucket of 40.
    def call_limit(h)
      v = h['x-shopify-shop-api-call-limit']
      return nil unless v&.include?('/')
      used, limit = v.split('/', 2).map { |x| count(x) }
      used && limit ? stated(quota: limit, remaining: [limit - used, 0].max) : nil
    end

    # Kong's per-window fields: one limit per window named.
    def per_window(h)
      WINDOW_SUFFIXES.filter_map do |suffix, window|
        get = ->(what) { (n = SEPARATE.map { |p| "#{p}#{what}-#{suffix}" }.find { |k| h.key?(k) }) && count(h[n]) }
        quota, remaining = get.('limit'), get.('remaining')
        stated(quota: quota, window: window * NS, remaining: remaining) if quota || remaining
      end
    end

    # Every limit the answer states, each count given its policy: the one of the same name, else
    # of the same quota, else the only one where the count states no quota. A policy no count
    # names still states the quota. Then limits of one quota and one count are one (Kong's
    # RateLimit-* beside its per-window fields, draft-8's beside the legacy ones), each filling in
    # what the other left out, the values of a longer window first where they state two.
    def limits(h, now)
      limits = h.key?('ratelimit') ? members(h['ratelimit']).map { |m| item(m, now) } : []
      policies = h.key?('ratelimit-policy') ? members(h['ratelimit-policy']).filter_map { |m| policy(m) } : []
      (s = separate(h, now, policies)) && limits << s
      limits.concat(per_window(h))
      (s = call_limit(h)) && limits << s
      limits.reject! { |l| l == stated || l == stated(separate: true) }
      used = [false] * policies.size
      limits.each do |l|
        i = l.name && policies.index { |p| p.name == l.name }
        i ||= l.quota && policies.index { |p| p.quota == l.quota }
        i ||= 0 if policies.size == 1 && l.quota.nil?
        next unless i
        l.quota ||= policies[i].quota
        l.window ||= policies[i].window
        used[i] = true
      end
      limits.concat(policies.each_index.reject { |i| used[i] }.map { |i| policies[i].dup }) if limits.empty?
      i = 0
      while i < limits.size
        a = limits[i]
        same = ->(b) { a.quota && b.quota == a.quota && a.remaining && b.remaining == a.remaining }
        if (j = (i + 1...limits.size).find { |k| same.(limits[k]) })
          b = limits.delete_at(j)
          if a.window && b.window && b.window > a.window # the longer window's values first
            a, b = b, a
            limits[i] = a
          end
          a.separate = b.separate if a.reset.nil? # GitHub's rule follows the reset kept
          a.window ||= b.window
          a.reset ||= b.reset
          a.name ||= b.name
        else
          i += 1
        end
      end
      limits
    end

    # Of the limits that state a count, the one nearest to empty (the smallest share of its quota
    # left, or the smallest count where a quota is missing), the later reset on a tie, else the
    # first; with no count, the first that states a quota.
    def binding(limits)
      counted = limits.select(&:remaining)
      return limits.find(&:quota) if counted.empty?
      quotas = counted.all? { |l| l.quota&.positive? }
      full = ->(l) { quotas ? l.remaining.to_f / l.quota.to_f : l.remaining.to_f }
      counted.drop(1).reduce(counted.first) do |best, l|
        a, b = full.(l), full.(best)
        a < b || (a == b && l.reset && (best.reset.nil? || l.reset > best.reset)) ? l : best
      end
    end

    # Answer::read; `wall` in Unix nanoseconds, the answer's Date instead when the two are more
    # than 2 s apart.
    def read(code, headers, latency, wall)
      h = {}
      headers.each do |k, v|
        name = lower(trim(text(k)))
        h[name] = trim(text(v.is_a?(Array) ? v.first : v)) unless h.key?(name)
      end
      date = (v = h['date']) && date_ns(v)
      now = date.nil? || (date - wall).abs <= CLOCK_SKEW ? wall : date
      st, b = status(code, h), binding(limits(h, now))
      ms = (v = h.key?('retry-after-ms') ? h['retry-after-ms'] : h['x-ms-retry-after-ms']) && number(v)
      ra = ms ? seconds(ms / 1e3) : (v = h['retry-after']) && retry_after(v, now)
      # The wait under other names (Symfony's, bucket4j's, Traefik's), read as a reset is.
      RETRY_AFTER_ALIASES.each { |n| ra ||= h.key?(n) ? reset(h[n], now) : nil }
      reset, wait = b&.reset, nil
      # On a 2xx a Retry-After can only be the reset (Flask-Limiter's), unless 0 (Atlassian's).
      if st == :ok then reset ||= (ra == 0 ? nil : ra)
      else # GitHub's primary limit names no wait but the time its count resets
        wait = ra || (b&.separate && b.remaining == 0 && st == :limited ? b.reset : nil)
      end
      policy = b&.quota && b.window&.positive? ? [b.quota, [b.window, DAY].min] : nil
      Answer.new(st, b&.remaining, b&.quota, wait && [wait, DAY].min, policy, reset && [reset, DAY].min, latency)
    end
  end

  # `status` an HTTP status (nil: no answer came), `headers` pairs or a Hash (of Arrays, as
  # Net::HTTPResponse#to_hash: the first value is read), `latency` in nanoseconds, `unix` the
  # wall clock in seconds (default now), or `unix_ns:` in nanoseconds: as Answer::read reads it.
  def self.read_answer(status, headers, latency, unix = nil, unix_ns: nil)
    unix_ns ||= if unix.nil? then Process.clock_gettime(Process::CLOCK_REALTIME, :nanosecond)
                else unix.is_a?(Integer) ? unix * NS : (unix * 1e9).round
                end
    Reading.read(status, headers || [], latency, unix_ns)
  end

  def self.classify(status) = (200..299).cover?(status) ? :ok : { 429 => :limited, 503 => :unavailable }.fetch(status, :error)
end

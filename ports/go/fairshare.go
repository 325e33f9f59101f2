// Package fairshare is a Go port of the fair-share client law of docs/fair-share.md:
// one FairShare per process, shared by its threads (goroutines), paces them on one
// clock and steers their per-thread rate by what the answers' rate-limit headers say.
package fairshare

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"sort"
	"sync"
	"time"
)

// Follows is the version of the crate crates/fair-share this port follows.
const Follows = "0.30.0"

// Params are the law's parameters (docs/fair-share.md, "Parameters"), durations in seconds.
// Quota and Period are 0 when not set (then the server's RateLimit-Policy, else 4,500 per hour).
// InitialSleep 0 is none.
type Params struct {
	Quota, Period   float64
	Reserve         float64
	Span            float64
	Crowd           float64
	Gain            float64
	WindowPeriods   float64
	MinSamples      float64
	MinFlow         float64
	DrainWindows    float64
	DrainFill       float64
	FullLevel       float64
	FullDrain       float64
	PullPeriods     float64
	PullMax         float64
	Decrease        float64
	RetryJitter     float64
	Jitter          float64
	InitialSleep    float64
	FirstSpread     float64
	Increase        float64
	ErrorBackoff    float64
	ErrorBackoffMax float64
	MaxRate         float64
	ResetResolution float64
}

// DefaultParams gives the defaults of docs/fair-share.md.
func DefaultParams() Params {
	return Params{
		Reserve: 0.005, Span: 0.03, Crowd: 1000, Gain: 0.4, WindowPeriods: 1, MinSamples: 3,
		MinFlow: 30, DrainWindows: 4, DrainFill: 1.0 / 12.0, FullLevel: 0.9, FullDrain: 1,
		PullPeriods: 1.5, PullMax: 0.5, Decrease: 0.5, RetryJitter: 0.5, Jitter: 0.1,
		Increase: 0.00005, ErrorBackoff: 1, ErrorBackoffMax: 60, MaxRate: 4, ResetResolution: 1,
	}
}

// SetParam sets a parameter by its Rust (snake_case) name.
func (p *Params) SetParam(name string, v float64) error {
	if math.IsNaN(v) || v < 0 {
		return fmt.Errorf("parameter %s: %v is out of range", name, v)
	}
	m := map[string]*float64{
		"quota": &p.Quota, "period": &p.Period, "reserve": &p.Reserve, "span": &p.Span,
		"crowd": &p.Crowd, "gain": &p.Gain, "window_periods": &p.WindowPeriods,
		"min_samples": &p.MinSamples, "min_flow": &p.MinFlow, "drain_windows": &p.DrainWindows,
		"drain_fill": &p.DrainFill, "full_level": &p.FullLevel, "full_drain": &p.FullDrain,
		"pull_periods": &p.PullPeriods, "pull_max": &p.PullMax, "decrease": &p.Decrease,
		"retry_jitter": &p.RetryJitter, "jitter": &p.Jitter, "initial_sleep": &p.InitialSleep,
		"first_spread": &p.FirstSpread, "increase": &p.Increase, "error_backoff": &p.ErrorBackoff,
		"error_backoff_max": &p.ErrorBackoffMax, "max_rate": &p.MaxRate,
		"reset_resolution": &p.ResetResolution,
	}
	f, ok := m[name]
	if !ok {
		return fmt.Errorf("unknown parameter %s", name)
	}
	*f = v
	return nil
}

type shape int

const (
	noCount shape = iota
	bucket
	fixedWindow
	slidingWindow
)

type phase int

const (
	phaseStart phase = iota
	phaseStartRefused
	phaseSteady
)

type reading struct{ t, r float64 }

type lawWindow struct {
	first, since   reading
	count          float64
	taken, refused float64
	last           reading // the latest reading so far
	overflow       float64 // tokens the refill may have lost to a full bucket, which the level cannot show
	successes      float64 // own successes read after the first reading: tokens the refill gave
}

type newestReading struct{ t, r, h float64 }

type policyT struct {
	q float64
	w int64
}

type endSeen struct{ e, t, r float64 }

// A window end the stated resets agree on: as first stated, the earliest stated (seconds to
// go are rounded at each answer's phase), and from when to when it was said.
type periodCur struct{ e, earliest, since, seen float64 }

type learnPrev struct{ end, at, T, r float64 }

type tallyT struct {
	start, readings, sum, exact, above float64
}

// A blocked key, blind to the count: the spacings 1/x the process holds at the second refusal
// in a row, and when a request sent after that hold began is refused too.
const (
	blockedHold      = 1.0
	blockedHoldAgain = 2.0
)

// FairShare is one process's law; its methods are safe for concurrent use.
type FairShare struct {
	mu     sync.Mutex
	n      int
	nf     float64
	p      Params
	random func() float64
	quotaP bool // quota parameter set

	B, R, period float64
	x            float64
	probe        float64
	// Blind: refusals since the last success, and the last hold for a blocked key in this run.
	inARow     int
	blockedAt  int64
	blockedSet bool
	clockAt    int64
	clockPh    float64

	offset    float64
	hasOffset bool
	tgt       []float64
	tgtSet    []bool
	jit       []float64
	pending   []bool
	hold      []int64
	sent      []int64
	sentSet   []bool
	errs      []int

	shape      shape
	spanLo     float64
	spanHi     float64
	phase      phase
	full       bool
	newest     *newestReading
	win        *lawWindow
	stated     bool
	policy     *policyT
	up         int64
	upSet      bool
	cut        int64
	cutSet     bool
	cuts       int
	votes      int
	echoed     bool // the level echoed own successes: a sliding window, whatever the resets say
	vsince     *float64
	e0         *endSeen
	fixedEnd   *[2]float64 // on a fixed window, the end stated since the mode or the last turnover, and that answer's latency
	drifted    bool        // a fixed window's end drifted once: stated ends place none again
	own        []float64
	tally      *tallyT
	cur        *periodCur
	last       *float64
	pRead      *[2]float64 // the end a period was last read at, and that period
	pBefore    *float64    // the period read at the end before it
	tm         float64
	nobucket   bool
	ceil       *float64
	prev       *learnPrev
	learned    *float64
	fromResets bool // a stated reset bounded the refill: own successes no longer do
	// Where no limit is stated: whether one was, the highest count read, and the rate the
	// test of a held top began at.
	limitStated bool
	top         *float64
	xAtTop      float64
	// The cuts at the first reading after the start: while none comes since, the test runs.
	steadyCuts *int
	// Stacked limits: the limit the last success stated, and the bound on the key's total
	// rate from refusals that stated another limit (+Inf before any).
	successLimit *float64
	otherCap     float64
}

// takeStatedLimit takes the limit an answer states: a refusal stating another limit than the
// last success's bounds the key's total rate by L/(T - resolution), T the later of its reset
// and Retry-After, where T exceeds two resolutions, and leaves the bucket; any other stated
// limit is the bucket.
func (f *FairShare) takeStatedLimit(a *Answer) {
	f.limitStated = true
	limit := float64(*a.Limit)
	if a.Class == ClassLimited && f.successLimit != nil && *f.successLimit != limit {
		wait := 0.0
		if a.Reset != nil {
			wait = secs(*a.Reset)
		}
		if a.RetryAfter != nil {
			wait = math.Max(wait, secs(*a.RetryAfter))
		}
		if wait > 2*f.res() {
			f.otherCap = math.Min(f.otherCap, limit/(wait-f.res()))
		}
		return
	}
	f.B = limit
	if a.Class == ClassOK {
		f.successLimit = &limit
	}
}

// heldTop: where no limit is stated, a level that cutting the rate to a quarter cannot raise
// is the bucket's top.
func (f *FairShare) heldTop(r float64, refused bool) {
	if f.limitStated {
		return
	}
	if f.top != nil && r <= *f.top && r+1 >= *f.top && !refused {
		top := *f.top
		if f.steadyCuts == nil && f.phase == phaseSteady {
			// The first reading after the start: a process cut in the start's flood tests from now.
			cuts := f.cuts
			f.steadyCuts = &cuts
			if cuts > 0 {
				f.xAtTop = f.x
				return
			}
		}
		uncut := f.cuts == 0 || (f.steadyCuts != nil && *f.steadyCuts == f.cuts)
		if uncut && top >= 1 && top+1 < f.B && f.x < f.xAtTop/4 {
			f.B = top + 1
			f.xAtTop = f.x
		}
		return
	}
	top := r
	if f.top != nil {
		top = math.Max(*f.top, r)
	}
	f.top = &top
	f.xAtTop = f.x
}

// New makes the law of a process of `threads` threads. random gives draws in [0, 1)
// (nil: math/rand's).
func New(threads int, p Params, random func() float64) (*FairShare, error) {
	if threads < 1 {
		return nil, errors.New("threads must be at least 1")
	}
	if (p.Quota > 0) != (p.Period > 0) {
		return nil, errors.New("set both quota and period, or neither")
	}
	if random == nil {
		random = defaultRandom
	}
	f := &FairShare{n: threads, nf: float64(threads), p: p, random: random, otherCap: math.Inf(1)}
	f.quotaP = p.Quota > 0
	if f.quotaP {
		f.B, f.period = p.Quota, p.Period
	} else {
		f.B, f.period = 4500, 3600
	}
	f.R = f.B / f.period
	if p.InitialSleep > 0 {
		f.x = f.clampx(math.Min(1/secs(durNs(p.InitialSleep)), f.R/f.nf))
	} else {
		f.x = f.clampx(f.R / f.nf)
	}
	f.probe = p.Increase * f.R * f.R
	f.tgt = make([]float64, threads)
	f.tgtSet = make([]bool, threads)
	f.jit = make([]float64, threads)
	f.pending = make([]bool, threads)
	f.hold = make([]int64, threads)
	f.sent = make([]int64, threads)
	f.sentSet = make([]bool, threads)
	f.errs = make([]int, threads)
	return f, nil
}

// Rate is the current per-thread rate x, requests per second.
func (f *FairShare) Rate() float64 { f.mu.Lock(); defer f.mu.Unlock(); return f.x }

// ---- time ----

func secs(ns int64) float64 { return float64(ns) / 1e9 }

// ns converts the law's own seconds to whole nanoseconds, as the page's ns(s): the f64
// product s·1e9 rounded half up; 0 for s <= 0. (Seconds given or read are dur: durNs.)
func ns(s float64) int64 {
	if !(s > 0) {
		return 0
	}
	if s >= 9.2e9 {
		return maxNs
	}
	return int64(math.Floor(s*1e9 + 0.5))
}

const maxNs = math.MaxInt64

// durNs is Rust's Duration::try_from_secs_f64 in nanoseconds: the exact product rounded
// to the nearest, ties to even.
func durNs(s float64) int64 {
	if !(s > 0) {
		return 0
	}
	if s >= 9.2e9 {
		return maxNs
	}
	v := new(big.Float).SetPrec(200).SetFloat64(s)
	v.Mul(v, new(big.Float).SetPrec(200).SetInt64(1e9))
	return roundBig(v)
}

// ---- derived values ----

func (f *FairShare) fixed() bool   { return f.shape == fixedWindow }
func (f *FairShare) sliding() bool { return f.shape == slidingWindow }

func (f *FairShare) clampx(v float64) float64 {
	return math.Min(math.Max(v, f.R/f.p.Crowd*0.01), f.p.MaxRate*f.R)
}

func (f *FairShare) ph(now int64) float64 {
	d := now - f.clockAt
	if d < 0 { // the phase stands still until the clock's time (a process held by a refusal)
		d = 0
	}
	return f.clockPh + secs(d)*f.x
}

// holdProcess: the key is empty until `until` for every thread, not only the one refused; the
// phase stops until then, so the threads resume in their order, one spacing apart.
func (f *FairShare) holdProcess(now, until int64) {
	at := f.clockAt
	if now > at {
		at = now
	}
	if until > at {
		f.clockPh = f.ph(now)
		f.clockAt = until
	}
}

func (f *FairShare) setX(now int64, v float64) {
	at := now
	if f.clockAt > at {
		at = f.clockAt
	}
	f.clockPh = f.ph(at)
	f.clockAt = at
	f.x = f.clampx(v)
}

func (f *FairShare) W() float64 { return f.p.WindowPeriods / f.x / math.Sqrt(f.nf) }

func emod(a, b float64) float64 {
	m := math.Mod(a, b)
	if m < 0 {
		m += math.Abs(b)
	}
	return m
}

func (f *FairShare) mid() float64 { return (f.spanLo + f.spanHi) / 2 }

func (f *FairShare) left(t float64) float64 { return f.period - emod(t-f.mid(), f.period) }

func (f *FairShare) r1() float64 {
	return math.Min(math.Max(f.p.Reserve*f.B, 1), f.B*0.25)
}

func (f *FairShare) crowd() bool {
	return !f.fixed() && 2*math.Sqrt(f.p.Crowd) <= math.Max(f.B-1-f.r1(), 0)*0.8
}

func (f *FairShare) r0() float64 {
	r1 := f.r1()
	if f.crowd() {
		return math.Min(math.Max(r1, 0.25*(2*math.Sqrt(f.p.Crowd))), f.B*0.25)
	}
	return r1
}

func (f *FairShare) L() float64 {
	var a float64
	switch {
	case f.fixed():
		a = 4
	case f.crowd():
		a = 2 * math.Sqrt(f.p.Crowd)
	default:
		a = 10
	}
	return math.Max(math.Max(f.p.Span*f.B, math.Min(a, math.Max(f.B-1-f.r0(), 0)*0.8))/mlog(f.p.Crowd), math.SmallestNonzeroFloat64)
}

func (f *FairShare) g(r float64) float64 {
	return f.R / f.p.Crowd * mexp(math.Min((r-f.r0())/f.L(), 50))
}

func c(v float64) float64 { return math.Min(math.Max(v, -mlog(100)), mlog(2)) }

func (f *FairShare) known() bool { return f.policy != nil || f.quotaP || f.learned != nil }

func (f *FairShare) sigma() float64 { return math.Max(f.period*0.02, f.res()) }

func (f *FairShare) res() float64 { return secs(durNs(f.p.ResetResolution)) }

// ---- wait ----

// WaitNs is the wait in nanoseconds before thread i's next request at now (ns on the
// caller's monotonic clock); 0 means send now (the send is booked).
func (f *FairShare) WaitNs(i int, now int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= f.n {
		return 1e9
	}
	if !f.pending[i] {
		f.pending[i] = true
		if !f.tgtSet[i] {
			if !f.hasOffset {
				f.offset = f.below(0, 1)
				f.hasOffset = true
				f.clockAt, f.clockPh = now, 0
			}
			f.tgt[i] = (float64(i) + f.offset) / f.nf * math.Max(secs(durNs(f.p.FirstSpread))*f.x, 1)
			f.tgtSet[i] = true
		}
		if f.p.Jitter > 0 {
			// Scaled to what the bucket tolerates: a bucket of one token lets no send come
			// early (the draw is made all the same, so the order of the draws does not
			// depend on the bucket).
			fits := math.Min(math.Max(f.B-1, 0), 1)
			f.jit[i] = f.within(-f.p.Jitter, f.p.Jitter) * fits / f.nf
		} else {
			f.jit[i] = 0
		}
	}
	a := ns(math.Max(f.tgt[i]+f.jit[i]-f.ph(now), 0) / f.x)
	h := f.hold[i] // the thread's hold, or the process's phase stopped by a refusal
	if f.clockAt > h {
		h = f.clockAt
	}
	h -= now
	if h < 0 {
		h = 0
	}
	// Looked at again every eighth of a period, and a hold waited out whole.
	cap := ns(1 / f.x / 8)
	if cap < 1 {
		cap = 1
	}
	w := a
	if cap < w {
		w = cap
	}
	if h > w {
		w = h
	}
	if w == 0 {
		f.pending[i] = false
		p := f.ph(now)
		t := f.tgt[i] + 1
		if t < p+0.5 {
			t += math.Ceil(p + 0.5 - t)
		}
		f.tgt[i] = t
		f.sent[i] = now
		f.sentSet[i] = true
	}
	return w
}

// Wait is WaitNs in seconds.
func (f *FairShare) Wait(i int, now float64) float64 {
	return secs(f.WaitNs(i, durNsSigned(now)))
}

func durNsSigned(s float64) int64 {
	if s < 0 {
		return -durNs(-s)
	}
	return durNs(s)
}

func (f *FairShare) below(lo, hi float64) float64  { return lo + f.random()*(hi-lo) }
func (f *FairShare) within(lo, hi float64) float64 { return lo + f.random()*(hi-lo) }

// ---- observe ----

// ObserveNs takes thread i's answer at now (ns) with the request's latency (ns).
func (f *FairShare) ObserveNs(i int, now int64, a *Answer, latency int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < 0 || i >= f.n {
		return
	}
	if a.Policy != nil && a.Policy.Window > 0 && float64(a.Policy.Limit)*1e9/float64(a.Policy.Window) > 0 {
		q := float64(a.Policy.Limit)
		f.stated = true
		pol := policyT{q, a.Policy.Window}
		if !f.quotaP && (f.policy == nil || *f.policy != pol) {
			f.policy = &pol
			if a.Limit == nil {
				f.B = q
			}
			f.refill(now, q*1e9/float64(a.Policy.Window), secs(a.Policy.Window))
		}
	}
	if a.Limit != nil && *a.Limit > 0 {
		f.takeStatedLimit(a)
	} else if a.Remaining != nil && float64(*a.Remaining) >= f.B {
		f.B = float64(*a.Remaining) + 1
	}
	s := now
	if f.sentSet[i] {
		s = f.sent[i]
	}
	ok := a.Class == ClassOK
	tcn := now - latency/2
	if tcn < s {
		tcn = s
	}
	tc := secs(tcn)
	if a.Remaining != nil && (ok || a.Class == ClassLimited) {
		r := float64(*a.Remaining)
		if f.shape == noCount {
			f.shape = bucket
		}
		if ok && a.Reset != nil {
			T := secs(*a.Reset)
			f.resets(secs(now), T, r)
			f.end(tc, T, r, 2*f.res())
		} else if a.Class == ClassLimited && a.Reset != nil && a.RetryAfter != nil {
			// A refusal whose reset is its Retry-After, far off: a window's end.
			T, ra := secs(*a.Reset), secs(*a.RetryAfter)
			if T > 2*f.res() && math.Abs(T-ra) <= f.res() {
				f.end(tc, T, r, f.res())
			}
		}
		if ok {
			f.echo(tc, r)
		}
		f.heldTop(r, a.Class == ClassLimited)
		f.level(now, tc, r)
		if ok && a.Reset != nil {
			T := secs(*a.Reset)
			f.endDrift(secs(now), T, secs(latency))
			f.periodFrom(now, T)
			f.learn(now, T, r)
			f.statedEnd(secs(s), T) // from the send: counted no sooner
			if *a.Remaining == 0 {
				f.holdSpentWindow(now, s, T)
			}
		}
	}
	switch a.Class {
	case ClassOK:
		f.errs[i] = 0
		// A token the refill gave, read after the window's first reading.
		if a.Remaining != nil && f.win != nil && tc > f.win.first.t {
			f.win.successes++
		}
		if f.shape == noCount {
			d := 0.0
			if f.upSet {
				d = secs(now - f.up)
			}
			f.up, f.upSet = now, true
			X := f.nf * f.x
			b := math.Min(f.R/X, 10)
			f.setX(now, math.Min((X+f.probe*b*b*d)/f.nf, f.R/f.nf))
			f.probe = math.Min(f.probe*mexp(1*0.005), f.R*f.R*1)
			f.inARow, f.blockedSet = 0, false
		}
	case ClassLimited:
		if f.win != nil {
			f.win.refused++
		}
		f.refused(i, now, s, a.RetryAfter)
	default:
		e := f.errs[i]
		if e > 30 {
			e = 30
		}
		f.hold[i] = now + ns(math.Min(secs(durNs(f.p.ErrorBackoff))*math.Pow(2, float64(e)), secs(durNs(f.p.ErrorBackoffMax))))
		f.errs[i]++
	}
}

func (f *FairShare) refill(now int64, r2, P float64) {
	k := r2 / f.R
	f.R = r2
	f.period = P
	f.setX(now, f.x*k)
}

func (f *FairShare) newWin(t, r float64) {
	f.win = &lawWindow{first: reading{t, r}, since: reading{t, r}, count: 1, last: reading{t, r}}
}

func (f *FairShare) level(now int64, t, r float64) {
	if f.newest == nil && r >= f.p.FullLevel*f.B {
		f.full = true
	} else if r <= f.r0()+f.L()*mlog(f.p.Crowd) {
		f.full = false
	}
	h := math.Max(secs(now)-t, 0)
	var p *newestReading
	if f.newest != nil && f.newest.t <= t {
		p = f.newest
	}
	if f.newest == nil || p != nil {
		f.newest = &newestReading{t, r, h}
	}
	if p != nil && !f.sliding() {
		rr := f.R
		if f.fixed() {
			rr = 0
		}
		if r > p.r+rr*(t-p.t+h+p.h)+math.Max(f.B*0.1, 2) {
			f.narrow(f.fixed(), f.spanLo, f.spanHi, p.t, t)
			f.fixedEnd = nil
			f.shape = fixedWindow
			f.full = false
			if f.win != nil {
				f.win.taken += math.Max(f.win.since.r-p.r, 0)
				if p.t+f.left(p.t) <= t+1e-9 {
					f.win.taken += math.Max(f.B-r, 0)
				}
				f.win.since = reading{t, r}
			} else {
				f.newWin(t, r)
			}
			return
		}
	}
	if p != nil && f.fixed() && r > p.r+2 {
		f.shape = bucket
	}
	if f.win == nil {
		f.newWin(t, r)
		return
	}
	w := f.win
	w.count++
	refill := f.R
	if f.fixed() {
		refill = 0
	}
	if t > w.last.t {
		// A reading at the top (B − 1, the request just counted) found the bucket full: since
		// the reading before it refilled from that level, then overflowed for at most the time
		// left over (others' requests only shorten it; for a process alone it is exact).
		if r >= f.B-1 && refill > 0 {
			fill := math.Max(f.B-w.last.r, 0) / refill
			w.overflow += math.Max((t-w.last.t)-fill, 0) * refill
		}
		w.last = reading{t, r}
	}
	flow := f.R*(t-w.first.t) - (r - w.since.r) + w.taken
	k := 1.0
	if f.phase != phaseSteady {
		k = 0.7
	}
	mf := f.p.MinFlow
	if f.fixed() {
		mf = math.Min(f.p.MinFlow, f.B*0.3)
	}
	if t-w.first.t >= f.W()*k && w.count >= f.p.MinSamples && flow >= mf {
		f.steer(now, t, r)
		f.phase = phaseSteady
		f.newWin(t, r)
	}
}

// narrow sets the span to NARROW(old, a, b).
// statedEnd: a success sent at t (counted no sooner) stated its fixed window's end T seconds
// on, rounded up, so the window closes no sooner than T - resolution. A reset predicted sooner
// moves on to that (a window opened by its key's first request turns over later each period
// than predicted).
func (f *FairShare) statedEnd(t, T float64) {
	if !f.fixed() {
		return
	}
	least := T - f.res()
	if left := f.left(t); T <= f.period+f.res() && left < least {
		later := least - left
		f.spanLo, f.spanHi = f.spanLo+later, f.spanHi+later
	}
}

// holdSpentWindow: a fixed window's allowance read spent (a count of 0) leaves the key empty
// until its stated end, less the end's rounding, for every thread.
func (f *FairShare) holdSpentWindow(now, sent int64, T float64) {
	if sure := T - f.res(); f.fixed() && sure > 0 {
		f.holdProcess(now, sent+ns(sure))
	}
}

func (f *FairShare) narrow(hasOld bool, lo, hi, a, b float64) {
	if hasOld {
		d := math.Round((a+b-(lo+hi))/2/f.period) * f.period
		nlo, nhi := math.Max(a, lo+d), math.Min(b, hi+d)
		if nlo <= nhi {
			f.spanLo, f.spanHi = nlo, nhi
			return
		}
	}
	f.spanLo, f.spanHi = a, b
}

func (f *FairShare) steer(now int64, t, r float64) {
	w := f.win
	dt := t - w.first.t
	g := f.p.Gain
	if f.sliding() {
		m := (w.first.r + r) / 2
		avg := (f.B - m) / f.period
		fall := (w.first.r - r) / dt
		S := math.Max(math.Max(avg, fall), f.R*0.02)
		k := g * math.Min(1*dt/f.period, 1)
		if fall > avg {
			k = g
		}
		f.setX(now, mexp(mlog(f.x)+k*c(mlog(math.Min(f.B/f.period, f.otherCap)/S))))
		return
	}
	fixed := f.fixed()
	// What the bucket lost to overflowing counts as refilled and taken by nobody.
	base, ref, over := f.R, 0.0, w.overflow
	if fixed {
		base, ref, over = 0, w.refused, 0
	}
	S := math.Max(base-(r-w.since.r-w.taken-ref+over)/dt, f.R*0.02)
	rm := (w.since.r + r) / 2
	tm := (w.since.t + t) / 2
	r0 := f.r0()
	var Rt float64
	if fixed {
		l := f.left(tm)
		// Past the reset, the allowances that follow; over at least the reset's uncertainty.
		H := math.Max(math.Max(l, f.W()), math.Min(2.5*f.res(), 0.5*f.period))
		Rt = math.Max((rm+1-0.75*r0*math.Min(l/f.period, 1)+f.B*(H-l)/f.period)/H, f.R*0.05)
	} else {
		tau := math.Max(f.p.DrainFill*f.B/f.R, f.p.DrainWindows*math.Max(f.W(), f.p.MinFlow/f.R))
		d := (rm - r0) / tau
		if f.full {
			d = math.Min(d, f.p.FullDrain*f.R)
		}
		Rt = math.Max(f.R+d, f.R*0.25)
	}
	Rt = math.Min(Rt, f.otherCap) // under another limit's bound
	k := g
	if f.phase != phaseSteady && !f.full && !fixed && S > 4*Rt {
		k = 1
	}
	lx := mlog(f.x) + k*c(mlog(Rt/S))
	// The whole total: a full bucket of unproven refill doubles it, then own successes bound R.
	alone := f.nf*f.x >= (1-0.1)*S
	if alone && f.overflowing(r) {
		lx = math.Max(lx, mlog(f.x)+mlog(2))
	}
	var pr float64
	if fixed {
		pr = f.g(r - math.Max(f.B-r0, 0)*f.left(t)/f.period)
	} else {
		pr = f.g(r)
	}
	N := math.Max(S/math.Max(f.x, pr), f.nf)
	sh := math.Min(math.Max(f.nf*f.x/S, 0), 1)
	pp := f.p.PullPeriods
	if fixed {
		pp = 4
	}
	lam := math.Min(f.L()/(pp*N), f.p.PullMax)
	if f.crowd() {
		lam = lam * (1 - 0.5*sh)
	} else {
		lam = lam * (1 - sh) * math.Min((1-sh)/0.1, 1)
	}
	aim := Rt
	if f.full {
		aim = Rt * f.x / S
	}
	lx = lx + lam*math.Max(mlog(math.Min(pr, aim))-lx, -mlog(100))
	f.setX(now, mexp(lx))
	if alone {
		f.learnFromSuccesses(now, t, r)
	}
}

// The stated resets pin a bucket's refill once their lowest ceiling is within this factor of
// their highest lower bound (unitless): a bound alone may be half the refill.
const pinnedRatio = 1.5

// pinned: a stated reset bounded the refill, and the ceiling they put on it lies close above.
func (f *FairShare) pinned() bool {
	return f.fromResets && f.ceil != nil && f.learned != nil && *f.ceil <= pinnedRatio**f.learned
}

// unproven: a bucket's refill that nothing states, tells or bounds from its resets, past the
// first window.
func (f *FairShare) unproven() bool {
	return !f.quotaP && f.policy == nil && !f.pinned() && !f.nobucket && !f.fixed() && f.phase == phaseSteady
}

// learnFromSuccesses: R·dt >= own successes + the level's rise over the window (others only
// take more), the count rounded down; from windows whose level rose by at most 1.
func (f *FairShare) learnFromSuccesses(now int64, t, r float64) {
	w := f.win
	dt, rise := t-w.first.t, r-w.first.r
	if !f.unproven() || dt <= 0 || rise > 1 {
		return
	}
	b := (w.successes + rise - 1) / dt
	if !(b > f.R) || (f.ceil != nil && b > *f.ceil) {
		return
	}
	f.learned = &b
	f.refill(now, b, f.B/b)
}

// overflowing: full at both ends of the window, own successes and no refusal.
func (f *FairShare) overflowing(r float64) bool {
	w, top := f.win, f.B-1
	return f.unproven() && f.B > 2 && w.successes > 0 && w.refused == 0 && w.first.r >= top && r >= top
}

func (f *FairShare) refused(i int, now, s int64, ra *int64) {
	f.errs[i] = 0
	spent := f.period*f.x*f.nf >= 4 && ra != nil && f.fixed() &&
		f.nearReset(secs(*ra)-f.left(secs(now)))
	if f.shape == noCount {
		f.inARow++
		f.setX(now, f.x*mexp(mlog(0.3)/f.nf))
		// Once held for a blocked key, a refusal leaves the probe.
		if !f.blockedSet {
			f.probe = math.Max(f.probe*mexp(-1*(1-0.005)), f.R*f.R*1e-6)
		}
		f.up, f.upSet = now, true
		f.cut, f.cutSet = now, true
		f.cuts++
		if f.phase == phaseStart {
			f.phase = phaseStartRefused
		}
		// A blocked key (a second refusal in a row): the whole process holds one spacing,
		// two when a request sent after that hold began is refused too (one sent before it
		// says nothing new), at most a period.
		if f.inARow >= 2 {
			k := 0.0
			if !f.blockedSet {
				k = blockedHold
			} else if s >= f.blockedAt {
				k = blockedHoldAgain
			}
			if k > 0 {
				f.blockedAt, f.blockedSet = now, true
				f.holdProcess(now, now+ns(math.Min(k/f.x, f.period)))
			}
		}
	} else if !spent && (!f.cutSet || (s >= f.cut && now >= f.cut+ns(1/f.x))) {
		var fc float64
		switch {
		case f.sliding():
			fc = math.Max(1-1/math.Max(f.nf*f.x*f.period, 1), f.p.Decrease)
		case !f.crowd():
			fc = f.p.Decrease
		case f.phase == phaseStart:
			fc = math.Min(f.nf/(2*math.Sqrt(f.p.Crowd)), f.p.Decrease)
		default:
			fc = mexp(mlog(f.p.Decrease) / f.nf)
		}
		f.setX(now, f.x*fc)
		f.cut, f.cutSet = now, true
		f.cuts++
		f.win = nil
		if f.phase == phaseStart {
			f.phase = phaseStartRefused
		}
	}
	// The retry jitter is drawn only when the 429 names a wait (docs/fair-share.md, "The
	// draws"): a draw on every 429 gives the same waits with the scripts' constant draw, but
	// another sequence of draws, and so other waits, with a real random source.
	if ra != nil {
		j := 0.0
		if f.p.RetryJitter > 0 {
			j = f.within(0, f.p.RetryJitter)
		}
		sra := secs(*ra)
		f.hold[i] = now + ns(sra+j*math.Min(sra, 1/f.x))
		// The key is surely empty for the Retry-After less its rounding, for every thread;
		// where the predicted reset explains the refusal, to that reset instead.
		if !spent {
			sure := *ra - durNs(f.p.ResetResolution)
			if sure < 0 {
				sure = 0
			}
			f.holdProcess(now, now+sure)
		} else {
			// Spent before the reset: every thread holds to it, where the wait is long enough
			// for its rounding to be a small part.
			left := f.left(secs(now))
			res := secs(durNs(f.p.ResetResolution))
			if sra > 4*res {
				f.holdProcess(now, now+ns(math.Max(sra-res, math.Min(left, sra))))
			}
		}
	} else {
		f.hold[i] = now
	}
}

// nearReset: d later than the reset predicted, on the period's circle (a reset predicted a
// moment ago is the next one's), within the prediction's uncertainty, or a resolution more (a
// Retry-After is rounded up).
func (f *FairShare) nearReset(d float64) bool {
	within := 0.1*f.period + (f.spanHi-f.spanLo)/2
	return emod(d+within, f.period)-within <= f.res()+within
}

func (f *FairShare) resets(t, T, r float64) {
	if f.fixed() || !f.known() {
		f.forgetSliding()
		return
	}
	sg := f.sigma()
	if T >= f.period-sg && T > math.Max(f.B-r, 0)/f.R+1.5*sg {
		if f.vsince == nil {
			v := t
			f.vsince = &v
		}
		f.votes++
		if f.votes >= 3 && t-*f.vsince > 2*sg && f.shape == bucket {
			f.shape = slidingWindow
		}
	} else if T < f.period-1.5*sg {
		f.forgetSliding()
	}
}

// forgetSliding: a stated reset says no sliding window, unless the level's echo said one.
func (f *FairShare) forgetSliding() {
	if f.sliding() && !f.echoed {
		f.shape = bucket
	}
	f.votes = 0
	f.vsince = nil
}

func (f *FairShare) end(t, T, r, apart float64) {
	if f.fixed() || f.drifted {
		f.e0 = nil
		return
	}
	res := f.res()
	e := t + T
	if f.e0 == nil || math.Abs(e-f.e0.e) > res {
		f.e0 = &endSeen{e, t, r}
		return
	}
	if !(r < f.e0.r && t-f.e0.t > apart) {
		return
	}
	// No period to place it by, but no bucket's end stays put while its count falls.
	if !f.known() {
		f.nobucket = true
		f.e0 = nil
		return
	}
	// A fixed window's end is never more than a period away (a sliding-window counter's can be).
	if f.e0.e-f.e0.t <= f.period+res {
		f.narrow(true, f.e0.e-res, f.e0.e, e-res, e)
		f.shape = fixedWindow
		f.full = false
		f.e0 = nil
		f.win = nil
	}
}

// On a fixed window every success of one window states its end within a resolution and the
// answer's latency, and the next window's a period later: an end that drifts further (than a
// resolution and the larger latency of the two answers), not by whole periods, without a
// turnover of the level, is a sliding-window counter's or a sliding log's.
func (f *FairShare) endDrift(t, T, latency float64) {
	if !f.fixed() {
		f.fixedEnd = nil
		return
	}
	e := t + T
	if f.fixedEnd == nil {
		f.fixedEnd = &[2]float64{e, latency}
		return
	}
	drift, res := math.Abs(e-f.fixedEnd[0]), f.res()
	slack := res + math.Max(latency, f.fixedEnd[1]) + 1e-6
	if drift <= slack {
		return
	}
	if f.period > 4*res && math.Abs(drift-math.Round(drift/f.period)*f.period) <= slack {
		f.fixedEnd = &[2]float64{e, latency}
	} else {
		f.shape = bucket
		f.fixedEnd = nil
		f.drifted = true
	}
}

func (f *FairShare) echo(t, r float64) {
	if !f.known() {
		f.own = f.own[:0]
		f.tally = nil
		return
	}
	for len(f.own) > 0 && (f.own[0] <= t-f.period || float64(len(f.own)) > 2*f.B) {
		f.own = f.own[1:]
	}
	// own is kept in order: k is how many of it are at or before t.
	k := sort.Search(len(f.own), func(i int) bool { return f.own[i] > t })
	f.own = append(f.own, 0)
	copy(f.own[k+1:], f.own[k:])
	f.own[k] = t
	if k == 0 || t-f.own[k-1] < 1/f.R {
		return
	}
	e := r + float64(k+1) - f.B
	if f.tally == nil {
		f.tally = &tallyT{start: t}
	}
	tl := f.tally
	tl.readings++
	tl.sum += r
	if math.Abs(e) < 0.5 {
		tl.exact++
	} else if e > 0 {
		tl.above++
	}
	if t-tl.start >= 4*f.period && tl.readings >= 30 {
		if tl.exact >= 0.95*tl.readings && tl.sum/tl.readings >= 0.1*f.B+1 {
			f.shape = slidingWindow
			f.echoed = true // whatever the stated resets say from now on
		} else if 2*tl.above >= tl.readings {
			f.echoed = false
			if f.sliding() {
				f.shape = bucket
			}
		}
		f.tally = &tallyT{start: t}
	}
}

func (f *FairShare) periodFrom(now int64, T float64) {
	if f.quotaP || f.stated {
		return
	}
	res := f.res()
	t := secs(now)
	e := t + T
	if f.cur == nil {
		f.cur = &periodCur{e, e, t, t}
		return
	}
	if math.Abs(e-f.cur.e) > res {
		if f.cur.seen-f.cur.since > 2*res {
			v := f.cur.earliest
			f.last = &v
		} else {
			f.last = nil
		}
		f.cur = &periodCur{e, e, t, t}
		return
	}
	f.cur.earliest = math.Min(f.cur.earliest, e)
	f.cur.seen = t
	if f.last == nil || f.cur.seen-f.cur.since <= 2*res {
		return
	}
	P := math.Round(f.cur.earliest - *f.last) // read again as the end narrows
	if f.pRead != nil && f.pRead[0] == f.cur.e {
		f.pRead[1] = P
	} else {
		if f.pRead != nil {
			v := f.pRead[1]
			f.pBefore = &v
		}
		f.pRead = &[2]float64{f.cur.e, P}
	}
	// Ends read further apart than a period now and then (a window opened late, an epoch
	// second rounded up): the shorter of the last two.
	if f.pBefore != nil {
		P = math.Min(P, *f.pBefore)
	}
	// Never shorter than an end stated alike takes: two ends closer are one end, rounded.
	if f.fixed() && math.Abs(f.mid()-*f.last) <= 0.1*P+res && P >= math.Max(2*res, 1) && P <= 86400 {
		pol := policyT{math.Floor(f.B), int64(P * 1e9)}
		if f.policy == nil || *f.policy != pol {
			f.policy = &pol
			f.refill(now, math.Floor(f.B)*1e9/(P*1e9), P)
		}
	}
}

// LearnQInside: whether LEARN's "q = prev; prev = (…)" belong to "if T > res:" (they do
// not: gcra_github replays only with them unconditional; see PAGE_GAPS.md).
const LearnQInside = false

func (f *FairShare) learn(now int64, T, r float64) {
	if f.quotaP || f.policy != nil {
		return
	}
	res := f.res()
	t := secs(now)
	f.tm = math.Max(f.tm, T)
	f.nobucket = f.nobucket || f.fixed()
	if f.nobucket {
		f.longest(now)
		return
	}
	var q *learnPrev
	if T > res {
		v := (f.B - r + 1) / (T - res)
		if f.ceil == nil || v < *f.ceil {
			f.ceil = &v
		}
		if LearnQInside {
			q = f.prev
			f.prev = &learnPrev{t + T, t, T, r}
		}
	}
	if !LearnQInside {
		q = f.prev
		f.prev = &learnPrev{t + T, t, T, r}
	}
	// An end that moved, or a count that rose (a bucket filling), is no fixed window's.
	if q == nil || t <= q.at || (math.Abs(t+T-q.end) <= res && r <= q.r+1) || T <= 0 {
		return
	}
	b := (f.B - r - 1) / T
	if T > 2*res && math.Abs(T-q.T) <= res && math.Abs(r-q.r) > 2*res*((f.B-math.Min(r, q.r)+1)/(T-res))+1 {
		b = math.Max(b, f.B/T)
	}
	// No bucket takes a week to fill: a window's reset (a counter's next drop) read as a bucket's.
	tooSlow := b > 0 && f.B/b > 7*86400
	if tooSlow || (f.ceil != nil && b > *f.ceil) {
		f.nobucket = true
		f.longest(now)
	} else if (f.learned == nil && b > 0) || (f.learned != nil && b > *f.learned) {
		f.learned = &b
		f.fromResets = true
		f.refill(now, b, f.B/b)
	}
}

func (f *FairShare) longest(now int64) {
	if f.tm > 0 && (f.learned == nil || *f.learned != f.B/f.tm) {
		v := f.B / f.tm
		f.learned = &v
		f.refill(now, f.B/f.tm, f.tm)
	}
}

var randMu sync.Mutex
var rng = rand.New(rand.NewSource(rand.Int63()))

func defaultRandom() float64 { randMu.Lock(); defer randMu.Unlock(); return rng.Float64() }

// The law's exp and ln (crmath.go).
func mexp(v float64) float64 { return crExp(v) }
func mlog(v float64) float64 { return crLog(v) }

// Observe takes thread i's answer in seconds on the caller's monotonic clock: its status
// (0 for a transport error), its header lines and the request's latency; the wall clock
// an epoch reset or a date is read against is now. It gives the answer's class.
func (f *FairShare) Observe(i int, now float64, status int, headers [][2]string, latency float64) Class {
	a := ReadAnswer(status, headers, time.Now().UnixNano())
	f.ObserveNs(i, durNsSigned(now), a, durNs(latency))
	return a.Class
}

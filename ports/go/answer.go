package fairshare

import (
	"math"
	"math/big"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Class is an answer's class.
type Class int

const (
	ClassOK Class = iota
	ClassLimited
	ClassUnavailable
	ClassError
)

func (c Class) String() string {
	return [...]string{"ok", "limited", "unavailable", "error"}[c]
}

// Policy is a quota per window (window in ns).
type Policy struct {
	Limit  uint64
	Window int64
}

// Answer is what the law reads in an answer (docs/headers.md): times in nanoseconds.
type Answer struct {
	Class      Class
	Remaining  *uint64
	Limit      *uint64
	RetryAfter *int64
	Policy     *Policy
	Reset      *int64
}

const day = int64(86400e9)

func capDay(v int64) int64 {
	if v > day {
		return day
	}
	return v
}

func u64p(v uint64) *uint64 { return &v }
func i64p(v int64) *int64   { return &v }

var floatRe = regexp.MustCompile(`^[+-]?((?i:inf|infinity|nan)|([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?)$`)

// parseF parses by Rust's grammar for f64.
func parseF(s string) (float64, bool) {
	if !floatRe.MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return v, true
		}
		l := strings.ToLower(strings.TrimLeft(s, "+-"))
		if l == "inf" || l == "infinity" {
			if strings.HasPrefix(s, "-") {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		}
		if l == "nan" {
			return math.NaN(), true
		}
		return 0, false
	}
	return v, true
}

var digitsRe = regexp.MustCompile(`^\+?[0-9]+$`)

// parseCount: a whole number, or a non-negative decimal cut to its whole part; past
// u64::MAX the largest count.
func parseCount(s string) (uint64, bool) {
	if digitsRe.MatchString(s) {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64)
		if err != nil {
			return math.MaxUint64, true
		}
		return v, true
	}
	f, ok := parseF(s)
	if !ok || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f >= 18446744073709551615.0 {
		return math.MaxUint64, true
	}
	return uint64(f), true
}

// secsToNs converts non-negative seconds to ns, capped at a day; none for negative or NaN.
func secsToNs(s float64) (int64, bool) {
	if math.IsNaN(s) || s < 0 {
		return 0, false
	}
	if s >= 86400 {
		return day, true
	}
	return durNs(s), true
}

func trim(s string) string { return strings.TrimFunc(s, unicode.IsSpace) }

// ---- structured lists ----

type part struct {
	key    string // lowercased, "" for a bare value
	val    string // unquoted
	quoted bool
}

func splitOutside(s string, sep byte) []string {
	var out []string
	q := false
	st := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q {
				i++
			}
		case '"':
			q = !q
		case sep:
			if !q {
				out = append(out, s[st:i])
				st = i + 1
			}
		}
	}
	return append(out, s[st:])
}

func unquote(s string) (string, bool) {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		in := s[1 : len(s)-1]
		var b strings.Builder
		for i := 0; i < len(in); i++ {
			if in[i] == '\\' && i+1 < len(in) {
				i++
			}
			b.WriteByte(in[i])
		}
		return b.String(), true
	}
	return s, false
}

func parseList(v string) [][]part {
	var items [][]part
	for _, it := range splitOutside(v, ',') {
		var ps []part
		for _, p := range splitOutside(it, ';') {
			p = trim(p)
			if p == "" {
				continue
			}
			eq := -1
			q := false
			for i := 0; i < len(p); i++ {
				if p[i] == '\\' && q {
					i++
				} else if p[i] == '"' {
					q = !q
				} else if p[i] == '=' && !q {
					eq = i
					break
				}
			}
			if eq >= 0 {
				val, qu := unquote(trim(p[eq+1:]))
				ps = append(ps, part{key: strings.ToLower(trim(p[:eq])), val: val, quoted: qu})
			} else {
				val, qu := unquote(p)
				ps = append(ps, part{val: val, quoted: qu})
			}
		}
		if len(ps) > 0 {
			items = append(items, ps)
		}
	}
	return items
}

// ---- limits ----

type limitT struct {
	name   *string
	quota  *uint64
	count  *uint64
	window *int64
	reset  *int64
	sep    bool // the separate fields'
}

type policyItem struct {
	name   *string
	quota  *uint64
	window *int64 // none when absent or zero
}

// parseWindow reads a policy window in seconds: none if no number, negative or under a
// nanosecond; capped at a day.
func parseWindow(v string) (int64, bool) {
	f, ok := parseF(v)
	if !ok {
		return 0, false
	}
	n, ok := secsToNs(f)
	if !ok || n == 0 {
		return 0, false
	}
	return n, true
}

var kongWindows = []struct {
	name string
	secs int64
}{{"second", 1}, {"minute", 60}, {"hour", 3600}, {"day", 86400}, {"month", 30 * 86400}, {"year", 365 * 86400}}

var prefixes = []string{"ratelimit-", "x-ratelimit-", "x-rate-limit-", "anthropic-ratelimit-requests-"}

// ReadAnswer reads an answer's status and headers at the wall clock wallNs (Unix ns).
// status 0 is a transport error.
func ReadAnswer(status int, headers [][2]string, wallNs int64) *Answer {
	h := map[string]string{}
	for _, kv := range headers {
		k := strings.ToLower(trim(kv[0]))
		if _, ok := h[k]; !ok {
			h[k] = trim(kv[1])
		}
	}
	a := &Answer{}
	switch {
	case status >= 200 && status < 300:
		a.Class = ClassOK
	case status == 429:
		a.Class = ClassLimited
	case status == 503:
		a.Class = ClassUnavailable
	case status == 403:
		a.Class = ClassError
		if v, ok := h["x-ratelimit-remaining"]; ok {
			if c, ok := parseCount(v); ok && c == 0 {
				a.Class = ClassLimited
			}
		}
		if _, ok := h["retry-after"]; ok {
			a.Class = ClassLimited
		}
	default:
		a.Class = ClassError
	}
	// the clock
	clock := wallNs
	if d, ok := h["date"]; ok {
		if dn, ok := parseDate(d); ok {
			if diff := dn - wallNs; diff > 2e9 || diff < -2e9 {
				clock = dn
			}
		}
	}
	// params: the first key of a list that is present gives the value, even when it is
	// no number
	pget := func(ps []part, keys ...string) (string, bool) {
		for _, k := range keys {
			for _, p := range ps {
				if p.key == k {
					return p.val, true
				}
			}
		}
		return "", false
	}
	var limits []*limitT
	// RateLimit: draft-8's named items, or one dictionary (draft-7)
	if v, ok := h["ratelimit"]; ok {
		items := parseList(v)
		var groups [][]part
		if len(items) > 0 && items[0][0].key == "" {
			groups = items
		} else if len(items) > 0 {
			var all []part
			for _, it := range items {
				all = append(all, it...)
			}
			groups = [][]part{all}
		}
		for _, it := range groups {
			l := &limitT{}
			if it[0].key == "" {
				nm := it[0].val
				l.name = &nm
			}
			if v, ok := pget(it, "r", "remaining"); ok {
				if c, ok := parseCount(v); ok {
					l.count = u64p(c)
				}
			}
			if v, ok := pget(it, "q", "l", "limit"); ok {
				if c, ok := parseCount(v); ok {
					l.quota = u64p(c)
				}
			}
			if v, ok := pget(it, "t", "reset"); ok {
				if n, ok := parseReset(v, clock); ok {
					l.reset = i64p(n)
				}
			}
			if v, ok := pget(it, "w"); ok {
				if n, ok := parseWindow(v); ok {
					l.window = i64p(n)
				}
			}
			if l.count != nil || l.quota != nil || l.reset != nil {
				limits = append(limits, l)
			}
		}
	}
	// policies
	var policies []policyItem
	addPolicy := func(it []part) {
		p := policyItem{}
		first := it[0]
		if first.key == "" {
			if c, ok := parseCount(first.val); ok && !first.quoted {
				p.quota = u64p(c)
			} else {
				nm := first.val
				p.name = &nm
			}
		}
		if v, ok := pget(it, "q", "l"); ok && p.quota == nil {
			if c, ok := parseCount(v); ok {
				p.quota = u64p(c)
			}
		}
		if v, ok := pget(it, "w"); ok {
			if n, ok := parseWindow(v); ok {
				p.window = i64p(n)
			}
		}
		if p.quota == nil {
			return
		}
		policies = append(policies, p)
	}
	if v, ok := h["ratelimit-policy"]; ok {
		for _, it := range parseList(v) {
			addPolicy(it)
		}
	}
	// the separate fields
	field := func(f string) (string, bool) {
		for _, p := range prefixes {
			if v, ok := h[p+f]; ok {
				return v, true
			}
			if v, ok := h[p+f+"-requests"]; ok {
				return v, true
			}
		}
		return "", false
	}
	sep := &limitT{sep: true}
	limitField, hasLimit := field("limit")
	if !hasLimit {
		// Zendesk's bare X-Rate-Limit is the limit.
		limitField, hasLimit = h["x-rate-limit"]
	}
	if hasLimit {
		items := parseList(limitField)
		if len(items) > 0 {
			for _, it := range items {
				if len(it) == 1 && it[0].key == "" {
					if sep.quota == nil {
						if c, ok := parseCount(it[0].val); ok {
							sep.quota = u64p(c)
						}
					}
				} else if len(it) > 1 {
					addPolicy(it)
				}
			}
		}
	}
	if v, ok := field("remaining"); ok {
		if c, ok := parseCount(v); ok {
			sep.count = u64p(c)
		}
	}
	// Without a limit field, what was used and what remains make it (Reddit's
	// x-ratelimit-used beside -remaining).
	if sep.quota == nil && sep.count != nil {
		if v, ok := field("used"); ok {
			if c, ok := parseCount(v); ok && c <= math.MaxUint64-*sep.count {
				sep.quota = u64p(c + *sep.count)
			}
		}
	}
	// Else the bucket a refill names (Spring Cloud Gateway's burst-capacity).
	if sep.quota == nil {
		if v, ok := field("burst-capacity"); ok {
			if c, ok := parseCount(v); ok {
				sep.quota = u64p(c)
			}
		}
	}
	// A request's cost in tokens (Spring Cloud Gateway's requested-tokens): the quota and the
	// count in requests.
	cost := uint64(1)
	if v, ok := field("requested-tokens"); ok {
		if c, ok := parseCount(v); ok && c > 1 {
			cost = c
		}
	}
	if sep.quota != nil {
		sep.quota = u64p(*sep.quota / cost)
	}
	if sep.count != nil {
		sep.count = u64p(*sep.count / cost)
	}
	// A bucket refilled at tokens every `every` seconds: its window is the time the refill fills
	// it in (Spring Cloud Gateway's replenish-rate a second, Atlassian's fillrate every
	// interval-seconds); else tollbooth's duration, the limit's window.
	tokens, every, refill := 0.0, 1.0, false
	if v, ok := field("replenish-rate"); ok {
		tokens, refill = parseF(v)
	}
	if !refill {
		if v, ok := field("fillrate"); ok {
			tokens, refill = parseF(v)
			if iv, ok := field("interval-seconds"); ok && refill {
				if e, ok := parseF(iv); ok {
					every = e
				}
			}
		}
	}
	if refill && tokens > 0 && every > 0 && sep.quota != nil {
		if n, ok := secsToNs(float64(*sep.quota) * float64(cost) * every / tokens); ok {
			sep.window = i64p(n)
		}
	} else if v, ok := field("duration"); ok {
		if n, ok := parseSpan(v); ok {
			sep.window = i64p(n)
		}
	}
	if v, ok := field("reset-after"); ok {
		if f, ok := parseF(v); ok {
			if n, ok := secsToNs(f); ok {
				sep.reset = i64p(n)
			}
		}
	}
	if sep.reset == nil {
		if v, ok := field("reset"); ok {
			if n, ok := parseReset(v, clock); ok {
				sep.reset = i64p(n)
			}
		}
	}
	if sep.quota != nil || sep.count != nil {
		limits = append(limits, sep)
	}
	// Kong's per-window fields
	for _, kw := range kongWindows {
		l := &limitT{}
		for _, p := range prefixes {
			if v, ok := h[p+"limit-"+kw.name]; ok && l.quota == nil {
				if c, ok := parseCount(v); ok {
					l.quota = u64p(c)
				}
			}
			if v, ok := h[p+"remaining-"+kw.name]; ok && l.count == nil {
				if c, ok := parseCount(v); ok {
					l.count = u64p(c)
				}
			}
		}
		if l.quota != nil || l.count != nil {
			l.window = i64p(capDay(kw.secs * 1e9))
			limits = append(limits, l)
		}
	}
	// Shopify's call limit, `X-Shopify-Shop-Api-Call-Limit: 32/40`: 32 used of a bucket of 40.
	if v, ok := h["x-shopify-shop-api-call-limit"]; ok {
		if at := strings.IndexByte(v, '/'); at >= 0 {
			used, ok1 := parseCount(trim(v[:at]))
			limit, ok2 := parseCount(trim(v[at+1:]))
			if ok1 && ok2 {
				left := uint64(0)
				if limit > used {
					left = limit - used
				}
				limits = append(limits, &limitT{quota: u64p(limit), count: u64p(left)})
			}
		}
	}
	// a policy joins its count
	if len(limits) == 0 {
		for _, p := range policies {
			p := p
			limits = append(limits, &limitT{name: p.name, quota: p.quota, window: p.window})
		}
	} else {
		for _, l := range limits {
			if l.window != nil {
				continue
			}
			var pick *policyItem
			if l.name != nil {
				for i := range policies {
					if policies[i].name != nil && *policies[i].name == *l.name {
						pick = &policies[i]
						break
					}
				}
			}
			if pick == nil && l.quota != nil {
				for i := range policies {
					if *policies[i].quota == *l.quota {
						pick = &policies[i]
						break
					}
				}
			}
			if pick == nil && l.quota == nil && len(policies) == 1 {
				pick = &policies[0]
			}
			if pick != nil {
				if l.quota == nil {
					l.quota = pick.quota
				}
				l.window = pick.window
			}
		}
	}
	// one limit stated twice is one
	var merged []*limitT
	for _, l := range limits {
		done := false
		if l.quota != nil && l.count != nil {
			for j, m := range merged {
				if m.quota != nil && m.count != nil && *m.quota == *l.quota && *m.count == *l.count {
					first, other := m, l
					if m.window != nil && l.window != nil && *m.window != *l.window && *l.window > *m.window {
						first, other = l, m
					}
					nl := *first
					nl.sep = m.sep // the earlier in the list says whose it is
					if nl.window == nil {
						nl.window = other.window
					}
					if nl.reset == nil {
						nl.reset = other.reset
					}
					if nl.name == nil {
						nl.name = other.name
					}
					merged[j] = &nl
					done = true
					break
				}
			}
		}
		if !done {
			merged = append(merged, l)
		}
	}
	// the binding limit
	var bind *limitT
	allQuota := true
	anyCount := false
	for _, l := range merged {
		if l.count != nil {
			anyCount = true
			if l.quota == nil {
				allQuota = false
			}
		}
	}
	if anyCount {
		for _, l := range merged {
			if l.count == nil {
				continue
			}
			if bind == nil {
				bind = l
				continue
			}
			var cmp int
			if allQuota {
				// l.count/l.quota vs bind.count/bind.quota
				cmp = cmpMul(*l.count, *bind.quota, *bind.count, *l.quota)
			} else {
				cmp = cmpU(*l.count, *bind.count)
			}
			if cmp < 0 {
				bind = l
			} else if cmp == 0 {
				if l.reset != nil && (bind.reset == nil || *l.reset > *bind.reset) {
					bind = l
				}
			}
		}
	} else {
		for _, l := range merged {
			if l.quota != nil {
				bind = l
				break
			}
		}
	}
	if bind != nil {
		a.Remaining = bind.count
		a.Limit = bind.quota
		if bind.quota != nil && bind.window != nil {
			a.Policy = &Policy{*bind.quota, *bind.window}
		}
		a.Reset = bind.reset
	}
	// waits
	var wait *int64
	msHidden := false
	if v, ok := h["retry-after-ms"]; ok {
		msHidden = true
		if f, ok := parseF(v); ok {
			if n, ok := secsToNs(f / 1000); ok {
				wait = i64p(n)
			}
		}
	}
	if !msHidden {
		if v, ok := h["x-ms-retry-after-ms"]; ok {
			if f, ok := parseF(v); ok {
				if n, ok := secsToNs(f / 1000); ok {
					wait = i64p(n)
				}
			}
		}
	}
	if wait == nil {
		if v, ok := h["retry-after"]; ok {
			if f, ok := parseF(v); ok {
				if n, ok := secsToNs(f); ok {
					wait = i64p(n)
				}
			} else if d, ok := parseDate(v); ok {
				n := d - clock
				if n < 0 {
					n = 0
				}
				wait = i64p(capDay(n))
			}
		}
	}
	// The wait under other names, where Retry-After is absent or unreadable: Symfony's
	// X-RateLimit-Retry-After, bucket4j's X-Rate-Limit-Retry-After-Seconds, Traefik's
	// X-Retry-In; each read as a reset is (seconds, an epoch, a Go duration or a date).
	if wait == nil {
		for _, name := range retryAfterAliases {
			if v, ok := h[name]; ok {
				if n, ok := parseReset(v, clock); ok {
					wait = i64p(n)
					break
				}
			}
		}
	}
	if a.Class == ClassOK {
		// On a 2xx a Retry-After can only be the reset (Flask-Limiter's), unless it is 0
		// (Atlassian's, on every answer while tokens are left).
		if a.Reset == nil && wait != nil && *wait != 0 {
			a.Reset = wait
		}
	} else {
		a.RetryAfter = wait
		if wait == nil && a.Class == ClassLimited && bind != nil && bind.sep && bind.count != nil && *bind.count == 0 && bind.reset != nil {
			a.RetryAfter = i64p(*bind.reset)
		}
	}
	return a
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpMul compares a·b with c·d exactly.
func cmpMul(a, b, c, d uint64) int {
	h1, l1 := bits.Mul64(a, b)
	h2, l2 := bits.Mul64(c, d)
	if h1 != h2 {
		return cmpU(h1, h2)
	}
	return cmpU(l1, l2)
}

var retryAfterAliases = []string{"x-ratelimit-retry-after", "x-rate-limit-retry-after-seconds", "x-retry-in"}

// parseReset reads a reset field: seconds under 1e9, an epoch second from 1e9, an epoch
// millisecond from 1e12, a Go duration or a date.
func parseReset(v string, clock int64) (int64, bool) {
	if f, ok := parseF(v); ok {
		if math.IsNaN(f) || f < 0 {
			return 0, false
		}
		if f < 1e9 {
			return secsToNs(f)
		}
		var at *big.Float
		if f < 1e12 {
			at = new(big.Float).SetPrec(200).SetFloat64(f)
		} else {
			at = new(big.Float).SetPrec(200).SetFloat64(f)
			at.Quo(at, big.NewFloat(1000))
		}
		at.Mul(at, big.NewFloat(1e9))
		at.Sub(at, new(big.Float).SetInt64(clock))
		d, _ := at.Float64()
		if d <= 0 {
			return 0, true
		}
		if d >= float64(day) {
			return day, true
		}
		return roundBig(at), true
	}
	if n, ok := parseGoDuration(v); ok {
		return capDay(n), true
	}
	if d, ok := parseDate(v); ok {
		n := d - clock
		if n < 0 {
			n = 0
		}
		return capDay(n), true
	}
	return 0, false
}

// parseSpan reads a length of time: seconds, or a Go duration (tollbooth's
// X-Rate-Limit-Duration).
func parseSpan(v string) (int64, bool) {
	t := trim(v)
	if f, ok := parseF(t); ok {
		return secsToNs(f)
	}
	return parseGoDuration(t)
}

var goDurRe = regexp.MustCompile(`^([0-9]*\.?[0-9]+|[0-9]+\.)(ms|us|µs|ns|h|m|s)`)

func parseGoDuration(v string) (int64, bool) {
	if v == "" {
		return 0, false
	}
	total := 0.0
	rest := v
	for rest != "" {
		m := goDurRe.FindStringSubmatch(rest)
		if m == nil {
			return 0, false
		}
		f, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return 0, false
		}
		mul := map[string]float64{"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}[m[2]]
		total += f * mul
		rest = rest[len(m[0]):]
	}
	n, ok := secsToNs(total)
	return n, ok
}

// ---- dates ----

var months = map[string]int{"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "May": 5, "Jun": 6, "Jul": 7, "Aug": 8, "Sep": 9, "Oct": 10, "Nov": 11, "Dec": 12}

func asciiFields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v' })
}

var numRe = regexp.MustCompile(`^\+?[0-9]+$`)

func dateNum(s string) (int64, bool) {
	if !numRe.MatchString(s) {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

func clockHMS(s string) (h, m, sec int64, ok bool) {
	p := strings.Split(s, ":")
	if len(p) != 3 {
		return
	}
	for _, x := range p {
		if len(x) != 2 || x[0] < '0' || x[0] > '9' || x[1] < '0' || x[1] > '9' {
			return
		}
	}
	h, _ = strconv.ParseInt(p[0], 10, 64)
	m, _ = strconv.ParseInt(p[1], 10, 64)
	sec, _ = strconv.ParseInt(p[2], 10, 64)
	if h > 23 || m > 59 || sec > 60 {
		return
	}
	return h, m, sec, true
}

func mkDate(y, mo, d, h, mi, s int64) (int64, bool) {
	if mo < 1 || mo > 12 || d < 1 || d > 31 || y < 1970 || y > 9999 {
		return 0, false
	}
	t := time.Date(int(y), time.Month(mo), int(d), int(h), int(mi), int(s), 0, time.UTC)
	if t.Unix() > 9000000000 {
		return math.MaxInt64 / 2, true
	}
	return t.Unix() * 1e9, true
}

// parseDate reads an HTTP date (IMF-fixdate, RFC 850, asctime) or RFC 3339, in Unix ns.
func parseDate(s string) (int64, bool) {
	f := asciiFields(s)
	switch len(f) {
	case 6: // Sun, 06 Nov 1994 08:49:37 GMT
		if f[5] != "GMT" || !strings.HasSuffix(f[0], ",") {
			return 0, false
		}
		d, ok1 := dateNum(f[1])
		mo, ok2 := months[f[2]]
		y, ok3 := dateNum(f[3])
		h, mi, sec, ok4 := clockHMS(f[4])
		if !(ok1 && ok2 && ok3 && ok4) || len(f[2]) != 3 {
			return 0, false
		}
		return mkDate(y, int64(mo), d, h, mi, sec)
	case 4: // Sunday, 06-Nov-94 08:49:37 GMT
		if f[3] != "GMT" || !strings.HasSuffix(f[0], ",") {
			return 0, false
		}
		p := strings.Split(f[1], "-")
		if len(p) < 3 {
			return 0, false
		}
		d, ok1 := dateNum(p[0])
		mo, ok2 := months[p[1]]
		y, ok3 := dateNum(p[2])
		h, mi, sec, ok4 := clockHMS(f[2])
		if !(ok1 && ok2 && ok3 && ok4) || len(p[1]) != 3 {
			return 0, false
		}
		if len(strings.TrimPrefix(p[2], "+")) == 2 {
			if y < 50 {
				y += 2000
			} else {
				y += 1900
			}
		}
		return mkDate(y, int64(mo), d, h, mi, sec)
	case 5: // Sun Nov  6 08:49:37 1994
		mo, ok2 := months[f[1]]
		d, ok1 := dateNum(f[2])
		h, mi, sec, ok4 := clockHMS(f[3])
		y, ok3 := dateNum(f[4])
		if !(ok1 && ok2 && ok3 && ok4) || len(f[1]) != 3 {
			return 0, false
		}
		return mkDate(y, int64(mo), d, h, mi, sec)
	case 1, 2:
		return parseRFC3339(s)
	}
	return 0, false
}

var rfc3339Re = regexp.MustCompile(`^(\+?[0-9]+)-(\+?[0-9]+)-(\+?[0-9]+)[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})$`)

func parseRFC3339(s string) (int64, bool) {
	m := rfc3339Re.FindStringSubmatch(trim(s))
	if m == nil {
		return 0, false
	}
	y, _ := dateNum(m[1])
	mo, _ := dateNum(m[2])
	d, _ := dateNum(m[3])
	h, mi, sec, ok := clockHMS(m[4] + ":" + m[5] + ":" + m[6])
	if !ok {
		return 0, false
	}
	t, ok := mkDate(y, mo, d, h, mi, sec)
	if !ok {
		return 0, false
	}
	if m[7] != "" {
		fr, _ := strconv.ParseFloat("0"+m[7], 64)
		t += durNs(fr)
	}
	if z := m[8]; z != "Z" && z != "z" {
		oh, _ := strconv.ParseInt(z[1:3], 10, 64)
		om, _ := strconv.ParseInt(z[4:6], 10, 64)
		if oh > 23 || om > 59 {
			return 0, false
		}
		off := (oh*3600 + om*60) * 1e9
		if z[0] == '+' {
			t -= off
		} else {
			t += off
		}
	}
	return t, true
}

// ReadingJSON is a reading as ports/answers.json and `drive --answers` write it.
func ReadingJSON(a *Answer) string {
	var b strings.Builder
	u := func(p *uint64) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatUint(*p, 10)
	}
	i := func(p *int64) string {
		if p == nil {
			return "null"
		}
		return strconv.FormatInt(*p, 10)
	}
	b.WriteString(`{"status":"` + a.Class.String() + `","remaining":` + u(a.Remaining) + `,"limit":` + u(a.Limit) +
		`,"retry_after":` + i(a.RetryAfter) + `,"policy":`)
	if a.Policy == nil {
		b.WriteString("null")
	} else {
		b.WriteString(`{"limit":` + strconv.FormatUint(a.Policy.Limit, 10) + `,"window":` + strconv.FormatInt(a.Policy.Window, 10) + `}`)
	}
	b.WriteString(`,"reset":` + i(a.Reset) + `}`)
	return b.String()
}

// roundBig rounds a non-negative big.Float to the nearest integer, ties to even.
func roundBig(v *big.Float) int64 {
	i, _ := v.Int(nil)
	fr := new(big.Float).SetPrec(200).Sub(v, new(big.Float).SetPrec(200).SetInt(i))
	c := fr.Cmp(big.NewFloat(0.5))
	n := i.Int64()
	if c > 0 || (c == 0 && n%2 == 1) {
		n++
	}
	return n
}

package fairshare

import (
	"math"
	"math/big"
)

// The law's ln and exp, rounded correctly (as glibc's are in all but a few cases): Go's
// math.Log and math.Exp are off by an ulp in about 3 % of the law's calls, which moves a
// wait by a nanosecond and parts the replay from the crate's (fixed_window_fast).

const crPrec = 192

func bf(v float64) *big.Float { return new(big.Float).SetPrec(crPrec).SetFloat64(v) }

// lnM is ln m for m in [1, 2], by 2·atanh((m−1)/(m+1)).
func lnM(m *big.Float) *big.Float {
	one := bf(1)
	num := new(big.Float).SetPrec(crPrec).Sub(m, one)
	den := new(big.Float).SetPrec(crPrec).Add(m, one)
	z := new(big.Float).SetPrec(crPrec).Quo(num, den)
	z2 := new(big.Float).SetPrec(crPrec).Mul(z, z)
	sum := new(big.Float).SetPrec(crPrec).Set(z)
	term := new(big.Float).SetPrec(crPrec).Set(z)
	eps := new(big.Float).SetPrec(crPrec).SetMantExp(bf(1), -crPrec-4)
	for k := 3; ; k += 2 {
		term.Mul(term, z2)
		t := new(big.Float).SetPrec(crPrec).Quo(term, bf(float64(k)))
		sum.Add(sum, t)
		if t.Sign() == 0 || new(big.Float).Abs(t).Cmp(eps) < 0 {
			break
		}
	}
	return sum.Mul(sum, bf(2))
}

var ln2Big = lnM(bf(2))

func crLog(x float64) float64 {
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	case x == 1:
		return 0
	}
	m := bf(x)
	e := m.MantExp(m) // m in [0.5, 1)
	m.SetMantExp(m, 1)
	e--
	r := lnM(m)
	r.Add(r, new(big.Float).SetPrec(crPrec).Mul(ln2Big, bf(float64(e))))
	v, _ := r.Float64()
	return v
}

func crExp(x float64) float64 {
	switch {
	case math.IsNaN(x):
		return x
	case x > 709.8:
		return math.Inf(1)
	case x < -745.2:
		return 0
	case x == 0:
		return 1
	}
	k := math.Round(x / math.Ln2)
	r := new(big.Float).SetPrec(crPrec).Sub(bf(x), new(big.Float).SetPrec(crPrec).Mul(ln2Big, bf(k)))
	const sq = 10
	r.SetMantExp(r, -sq)
	// Taylor series of exp(r)
	sum := bf(1)
	term := bf(1)
	eps := new(big.Float).SetPrec(crPrec).SetMantExp(bf(1), -crPrec-4)
	for n := 1; n < 200; n++ {
		term.Mul(term, r)
		term.Quo(term, bf(float64(n)))
		sum.Add(sum, term)
		if term.Sign() == 0 || new(big.Float).Abs(term).Cmp(eps) < 0 {
			break
		}
	}
	for i := 0; i < sq; i++ {
		sum.Mul(sum, sum)
	}
	sum.SetMantExp(sum, int(k))
	v, _ := sum.Float64()
	return v
}

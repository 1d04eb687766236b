package experiment

import (
	"math"
)

// The sequential test is the mixture sequential probability ratio test
// (mSPRT) of Johari, Koomen, Pekelis and Walsh, "Peeking at A/B tests"
// (KDD 2017; Robbins 1970 for the normal mixture): for the difference of
// two means, with its estimate d and variance V after n observations and
// a normal mixing distribution N(0, tau^2) over the effect,
//
//	Lambda_n = sqrt(V/(V+tau^2)) * exp(d^2 tau^2 / (2 V (V+tau^2)))
//
// is a martingale under no effect, so p_n = min over m <= n of 1/Lambda_m
// is a p-value that stays valid however often it is looked at, and the
// effects theta whose Lambda_n(theta) < 1/alpha form a confidence
// sequence: d +- sqrt(V (V+tau^2)/tau^2 * (2 ln(1/alpha) + ln((V+tau^2)/V))),
// intersected over time. V uses each arm's sample variance (a plug-in, as
// in the paper's practical version), so the test starts once each arm has
// MinPerArm observations.

// MinPerArm is how many observations each arm needs before the sequential
// test updates: the plug-in variance of fewer is too rough.
const MinPerArm = 20

// moments accumulates one arm's observations.
type moments struct {
	n        int
	sum, ssq float64
}

func (m *moments) add(x float64) { m.n++; m.sum += x; m.ssq += x * x }

func (m moments) mean() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

// variance is the sample variance (n-1), 0 for fewer than two.
func (m moments) variance() float64 {
	if m.n < 2 {
		return 0
	}
	v := (m.ssq - m.sum*m.sum/float64(m.n)) / float64(m.n-1)
	return max(v, 0)
}

// Seq is the sequential test of one outcome: observations of control and
// treatment, in the order they arrive.
type Seq struct {
	Alpha, Tau float64
	c, t       moments
	p          float64 // running always-valid p-value
	lo, hi     float64 // running confidence sequence
	started    bool
}

// NewSeq starts a test at level alpha with mixing scale tau (the size of
// effect the test is tuned to find).
func NewSeq(alpha, tau float64) *Seq {
	return &Seq{Alpha: alpha, Tau: tau, p: 1, lo: math.Inf(-1), hi: math.Inf(1)}
}

// Add records one observation of an arm (control or not) and updates
// the test.
func (s *Seq) Add(control bool, x float64) {
	if control {
		s.c.add(x)
	} else {
		s.t.add(x)
	}
	if s.c.n < MinPerArm || s.t.n < MinPerArm {
		return
	}
	d, v := s.diff()
	if v <= 0 {
		return
	}
	s.started = true
	tau2 := s.Tau * s.Tau
	logLambda := 0.5*math.Log(v/(v+tau2)) + d*d*tau2/(2*v*(v+tau2))
	s.p = min(s.p, math.Exp(-logLambda))
	r := math.Sqrt(v * (v + tau2) / tau2 * (2*math.Log(1/s.Alpha) + math.Log((v+tau2)/v)))
	s.lo, s.hi = max(s.lo, d-r), min(s.hi, d+r)
}

// diff is treatment minus control, and its variance.
func (s *Seq) diff() (d, v float64) {
	d = s.t.mean() - s.c.mean()
	if s.c.n > 0 && s.t.n > 0 {
		v = s.c.variance()/float64(s.c.n) + s.t.variance()/float64(s.t.n)
	}
	return d, v
}

// P is the always-valid p-value so far (1 before the test starts).
func (s *Seq) P() float64 { return s.p }

// CS is the always-valid confidence sequence so far, at level 1-alpha
// (infinite before the test starts).
func (s *Seq) CS() (lo, hi float64) { return s.lo, s.hi }

// Fixed is the difference with its fixed-sample 95% interval (normal
// approximation): valid for one look at a planned size only.
func (s *Seq) Fixed() (d, lo, hi float64) {
	d, v := s.diff()
	r := 1.959963984540054 * math.Sqrt(v)
	return d, d - r, d + r
}

// Needed is how many more conversations (both arms together) a
// fixed-sample test at level alpha with 80% power needs to detect an
// effect of size effect, with holdout the control fraction; the arms'
// variances are estimated from the data so far (0.25, a proportion's
// largest, when an arm has too few).
func (s *Seq) Needed(effect, holdout float64) int {
	if effect <= 0 || holdout <= 0 || holdout >= 1 {
		return 0
	}
	vc, vt := s.c.variance(), s.t.variance()
	if s.c.n < MinPerArm || vc == 0 {
		vc = 0.25
	}
	if s.t.n < MinPerArm || vt == 0 {
		vt = 0.25
	}
	z := normalQuantile(1-s.Alpha/2) + normalQuantile(0.8)
	total := z * z * (vc/holdout + vt/(1-holdout)) / (effect * effect)
	return max(0, int(math.Ceil(total))-s.c.n-s.t.n)
}

// normalQuantile is the standard normal's inverse CDF.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

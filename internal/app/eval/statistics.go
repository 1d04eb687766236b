package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/reinception/rein/agentworker/taubench"
)

// Bootstrap settings of every interval in a report: the percentile
// bootstrap over scenarios with BootstrapResamples resamples drawn from a
// PCG generator seeded with BootstrapSeed, so the same results always give
// the same interval.
const (
	BootstrapResamples = 2000
	BootstrapSeed      = 20240515
	BootstrapLevel     = 0.95
)

// PassHatK is τ-bench's pass^k: for each task with c successes out of n
// trials, C(c,k)/C(n,k), averaged over tasks. pass^1 is the mean success
// rate. k must be within 1..n.
func PassHatK(successes []int, n, k int) (float64, error) {
	if n < 1 || k < 1 || k > n {
		return 0, fmt.Errorf("pass^k: k=%d with %d trials per task", k, n)
	}
	for _, c := range successes {
		if c < 0 || c > n {
			return 0, fmt.Errorf("pass^k: %d successes out of %d trials", c, n)
		}
	}
	if len(successes) == 0 {
		return 0, errors.New("pass^k: no tasks")
	}
	return taubench.PassHatK(successes, n)[k-1], nil
}

// Interval is an estimate with its confidence interval.
type Interval struct {
	Value float64 `json:"value"`
	Low   float64 `json:"ci_low"`
	High  float64 `json:"ci_high"`
	// Method is how the interval was drawn (MethodClusterBootstrap,
	// MethodWilson; empty for BootstrapMean's).
	Method string `json:"method,omitempty"`
}

// BootstrapMean estimates the mean of values (one per scenario) and its
// BootstrapLevel percentile-bootstrap interval: resamples means of
// len(values) values drawn with replacement, from a generator seeded with
// seed; the bounds are the 2.5 % and 97.5 % quantiles of those means
// (linear interpolation between order statistics). An empty input gives
// the zero Interval.
func BootstrapMean(values []float64, resamples int, seed uint64) Interval {
	if len(values) == 0 {
		return Interval{}
	}
	iv := Interval{Value: mean(values)}
	if resamples < 1 {
		iv.Low, iv.High = iv.Value, iv.Value
		return iv
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	n := len(values)
	for r := range means {
		sum := 0.0
		for range n {
			sum += values[rng.IntN(n)]
		}
		means[r] = sum / float64(n)
	}
	slices.Sort(means)
	alpha := (1 - BootstrapLevel) / 2
	iv.Low, iv.High = quantile(means, alpha), quantile(means, 1-alpha)
	return iv
}

// quantile of sorted xs at q in [0,1], interpolating linearly between
// order statistics (the usual "type 7" definition).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// McNemar test methods.
const (
	// McNemarExact: two-sided exact binomial test on the discordant pairs
	// (used when b+c < McNemarExactBelow).
	McNemarExact = "exact_binomial"
	// McNemarChi2: chi-square with Edwards' continuity correction,
	// (|b-c|-1)²/(b+c), one degree of freedom.
	McNemarChi2 = "chi2_continuity"
	// McNemarExactBelow is the discordant count under which the exact
	// test is used.
	McNemarExactBelow = 25
)

// McNemarResult is McNemar's test on paired binary outcomes.
type McNemarResult struct {
	// B counts pairs where only the first condition succeeded, C pairs
	// where only the second did.
	B, C   int
	P      float64
	Method string
	// Statistic is the chi-square value (0 for the exact test).
	Statistic float64
}

// McNemar tests whether two conditions differ on paired outcomes from the
// discordant counts b and c: exact binomial (p = 2·P[X ≤ min(b,c)], X ~
// Bin(b+c, ½), capped at 1) when b+c < 25, chi-square with continuity
// correction otherwise. No discordant pair gives p = 1.
func McNemar(b, c int) McNemarResult {
	r := McNemarResult{B: b, C: c, P: 1, Method: McNemarExact}
	n := b + c
	if n == 0 {
		return r
	}
	if n < McNemarExactBelow {
		tail := 0.0
		for i := 0; i <= min(b, c); i++ {
			tail += math.Exp(lchoose(n, i) - float64(n)*math.Ln2)
		}
		r.P = math.Min(1, 2*tail)
		return r
	}
	d := max(0, math.Abs(float64(b-c))-1) // b = c: no evidence, χ² = 0
	r.Method = McNemarChi2
	r.Statistic = d * d / float64(n)
	r.P = math.Erfc(math.Sqrt(r.Statistic / 2)) // chi-square survival, 1 df
	return r
}

// McNemarPaired counts the discordant pairs of two equally long outcome
// lists (pair i is the same scenario: one outcome per scenario, see
// ScenarioOutcome) and tests them.
func McNemarPaired(first, second []bool) (McNemarResult, error) {
	if len(first) != len(second) {
		return McNemarResult{}, fmt.Errorf("mcnemar: %d and %d outcomes are not paired", len(first), len(second))
	}
	b, c := 0, 0
	for i := range first {
		switch {
		case first[i] && !second[i]:
			b++
		case !first[i] && second[i]:
			c++
		}
	}
	return McNemar(b, c), nil
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// CohenKappa is Cohen's κ between two raters' binary judgements of the
// same items: (po - pe)/(1 - pe). ok is false when κ is undefined (no
// items, different lengths, or pe = 1: both raters constant and equal).
func CohenKappa(a, b []bool) (kappa float64, ok bool) {
	if len(a) == 0 || len(a) != len(b) {
		return 0, false
	}
	// Counted in integers so that κ is exact: with n items, a agreements
	// and x, y "true" judgements, po = a/n and pe = (xy + (n-x)(n-y))/n².
	n, agree, ya, yb := len(a), 0, 0, 0
	for i := range a {
		if a[i] == b[i] {
			agree++
		}
		if a[i] {
			ya++
		}
		if b[i] {
			yb++
		}
	}
	chance := ya*yb + (n-ya)*(n-yb)
	if chance == n*n {
		return 0, false
	}
	return float64(n*agree-chance) / float64(n*n-chance), true
}

// TrialKappa is the agreement between trials: trials[t][i] is the outcome
// of scenario i in trial t; the result is Cohen's κ averaged over every
// pair of trials where it is defined. ok is false with fewer than two
// trials or when no pair has a defined κ.
func TrialKappa(trials [][]bool) (float64, bool) {
	sum, n := 0.0, 0
	for i := range trials {
		for j := i + 1; j < len(trials); j++ {
			if k, ok := CohenKappa(trials[i], trials[j]); ok {
				sum += k
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// ScenarioOutcome is a scenario's one outcome for the tests that need
// independent pairs (McNemar): success when a strict majority of its
// trials succeeded (with an even k, a tie is a failure). Counting every
// (scenario, trial) as a pair would treat a scenario's repeated trials as
// independent evidence (pseudo-replication).
func ScenarioOutcome(successes, trials int) bool { return 2*successes > trials }

// WilsonZ is the normal quantile of a 95 % interval.
const WilsonZ = 1.959963984540054

// Wilson is the Wilson score interval of a proportion p over n units at
// WilsonZ: never of zero width for n ≥ 1 (0/4 gives [0, 0.490]), and
// sensible near 0 and 1 where the normal and percentile intervals are not.
// p is a proportion of units (a Pass@1 over n scenarios counts as
// p·n successes).
func Wilson(p float64, n int) Interval {
	if n < 1 {
		return Interval{Value: p}
	}
	z2 := WilsonZ * WilsonZ
	nf := float64(n)
	centre := (p + z2/(2*nf)) / (1 + z2/nf)
	half := WilsonZ / (1 + z2/nf) * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return Interval{Value: p, Low: max(0, centre-half), High: min(1, centre+half)}
}

// Cluster is one unit of the cluster bootstrap: the scenarios played on
// one τ-bench task, which share the task's instruction, data and
// difficulty and so are not independent.
type Cluster []float64

// ClusterBootstrapMean estimates the mean over every value of clusters
// and its BootstrapLevel percentile interval, resampling whole clusters
// with replacement (resamples draws from a PCG seeded with seed): the
// mean of a resample is its values' sum over their count. With one
// cluster the interval is the point.
func ClusterBootstrapMean(clusters []Cluster, resamples int, seed uint64) Interval {
	sum, n := 0.0, 0
	for _, c := range clusters {
		for _, v := range c {
			sum += v
		}
		n += len(c)
	}
	if n == 0 {
		return Interval{}
	}
	iv := Interval{Value: sum / float64(n)}
	if resamples < 1 || len(clusters) < 2 {
		iv.Low, iv.High = iv.Value, iv.Value
		return iv
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, 0, resamples)
	for range resamples {
		s, k := 0.0, 0
		for range clusters {
			c := clusters[rng.IntN(len(clusters))]
			for _, v := range c {
				s += v
			}
			k += len(c)
		}
		if k > 0 {
			means = append(means, s/float64(k))
		}
	}
	slices.Sort(means)
	alpha := (1 - BootstrapLevel) / 2
	iv.Low, iv.High = quantile(means, alpha), quantile(means, 1-alpha)
	return iv
}

// FleissKappa is Fleiss' κ of binary ratings: successes[i] of the
// scenario i's trials succeeded, each scenario rated by the same number of
// trials. ok is false with fewer than two trials or scenarios, or when
// chance agreement is 1 (every rating the same).
func FleissKappa(successes []int, trials int) (float64, bool) {
	if trials < 2 || len(successes) < 2 {
		return 0, false
	}
	n := float64(trials)
	agree, yes := 0.0, 0
	for _, c := range successes {
		y, f := float64(c), float64(trials-c)
		agree += (y*y + f*f - n) / (n * (n - 1))
		yes += c
	}
	pbar := agree / float64(len(successes))
	py := float64(yes) / (n * float64(len(successes)))
	pe := py*py + (1-py)*(1-py)
	if pe >= 1 {
		return 0, false
	}
	return (pbar - pe) / (1 - pe), true
}

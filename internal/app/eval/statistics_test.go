package eval

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// A worked example: three tasks, four trials each, with 4, 2 and 0 successes.
// pass^1 = (4/4 + 2/4 + 0)/3 = 1/2; pass^2 = (1 + C(2,2)/C(4,2) + 0)/3 =
// (1 + 1/6)/3 = 7/18; pass^3 = (1 + 0 + 0)/3 = 1/3 = pass^4.
func TestPassHatKWorkedExample(t *testing.T) {
	want := map[int]float64{1: 0.5, 2: 7.0 / 18, 3: 1.0 / 3, 4: 1.0 / 3}
	for k, w := range want {
		got, err := PassHatK([]int{4, 2, 0}, 4, k)
		if err != nil || !near(got, w, 1e-12) {
			t.Errorf("pass^%d = %v (%v), want %v", k, got, err, w)
		}
	}
	// Three successes out of four on one task: pass^2 = C(3,2)/C(4,2) = 1/2.
	if got, _ := PassHatK([]int{3}, 4, 2); !near(got, 0.5, 1e-12) {
		t.Errorf("pass^2 of 3/4 = %v", got)
	}
	for _, bad := range []struct {
		s    []int
		n, k int
	}{{[]int{1}, 2, 3}, {[]int{3}, 2, 1}, {nil, 2, 1}, {[]int{1}, 2, 0}} {
		if _, err := PassHatK(bad.s, bad.n, bad.k); err == nil {
			t.Errorf("PassHatK(%v, %d, %d) accepted", bad.s, bad.n, bad.k)
		}
	}
}

func TestBootstrapMean(t *testing.T) {
	// Two scenarios, one pass, one fail: a resample's mean is 0 (p ¼),
	// ½ (p ½) or 1 (p ¼), so the 2.5 % and 97.5 % quantiles are 0 and 1.
	iv := BootstrapMean([]float64{0, 1}, BootstrapResamples, BootstrapSeed)
	if iv != (Interval{Value: 0.5, Low: 0, High: 1}) {
		t.Errorf("{0,1}: %+v", iv)
	}
	// A constant sample has no spread.
	if iv := BootstrapMean([]float64{0.75, 0.75, 0.75}, 500, 1); iv != (Interval{Value: 0.75, Low: 0.75, High: 0.75}) {
		t.Errorf("constant: %+v", iv)
	}
	// 100 scenarios, half passing: the interval is close to the normal
	// approximation 0.5 ± 1.96·√(0.25/100) = [0.402, 0.598].
	xs := make([]float64, 100)
	for i := range 50 {
		xs[i] = 1
	}
	iv = BootstrapMean(xs, BootstrapResamples, BootstrapSeed)
	if iv.Value != 0.5 || !near(iv.Low, 0.402, 0.025) || !near(iv.High, 0.598, 0.025) {
		t.Errorf("half of 100: %+v", iv)
	}
	// Same seed, same interval; another seed, (almost surely) another one.
	if again := BootstrapMean(xs, BootstrapResamples, BootstrapSeed); again != iv {
		t.Errorf("not reproducible: %+v then %+v", iv, again)
	}
	if BootstrapMean(nil, 10, 1) != (Interval{}) {
		t.Error("empty sample")
	}
}

func TestMcNemarTextbookValues(t *testing.T) {
	cases := []struct {
		b, c   int
		p      float64
		method string
		stat   float64
	}{
		// Exact: 0 vs 5 discordant pairs, p = 2·(½)^5 = 0.0625.
		{0, 5, 0.0625, McNemarExact, 0},
		// Exact: 1 vs 6, p = 2·(1+7)/2^7 = 0.125.
		{1, 6, 0.125, McNemarExact, 0},
		// Balanced discordance: p capped at 1.
		{3, 3, 1, McNemarExact, 0},
		{0, 0, 1, McNemarExact, 0},
		// Chi-square with continuity: b=121, c=59 (the usual textbook
		// table a=101, b=121, c=59, d=33): (62-1)²/180 = 20.672, p ≈ 5.45e-6.
		{121, 59, 5.450094825427123e-06, McNemarChi2, 20.672222222222222},
		// b=30, c=10: (20-1)²/40 = 9.025, p ≈ 0.002663.
		{30, 10, 0.002663119259138554, McNemarChi2, 9.025},
	}
	for _, c := range cases {
		r := McNemar(c.b, c.c)
		if r.Method != c.method || !near(r.P, c.p, 1e-9*math.Max(1, c.p)) || !near(r.Statistic, c.stat, 1e-9) {
			t.Errorf("McNemar(%d, %d) = %+v, want p %v by %s (statistic %v)", c.b, c.c, r, c.p, c.method, c.stat)
		}
	}
	r, err := McNemarPaired([]bool{true, true, false, false, true}, []bool{false, true, true, false, false})
	if err != nil || r.B != 2 || r.C != 1 {
		t.Fatalf("paired: %+v %v", r, err)
	}
	if _, err := McNemarPaired([]bool{true}, nil); err == nil {
		t.Fatal("unpaired lists accepted")
	}
}

func TestCohenKappaTextbookValues(t *testing.T) {
	// The usual textbook table of 50 items: both yes 20, A yes B no 5,
	// A no B yes 10, both no 15. po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5,
	// κ = 0.4.
	var a, b []bool
	add := func(n int, x, y bool) {
		for range n {
			a, b = append(a, x), append(b, y)
		}
	}
	add(20, true, true)
	add(5, true, false)
	add(10, false, true)
	add(15, false, false)
	if k, ok := CohenKappa(a, b); !ok || !near(k, 0.4, 1e-12) {
		t.Errorf("κ = %v (%v), want 0.4", k, ok)
	}
	// Perfect agreement with both values present: κ = 1; complete
	// disagreement on balanced data: κ = -1.
	if k, ok := CohenKappa([]bool{true, false}, []bool{true, false}); !ok || k != 1 {
		t.Errorf("perfect: %v %v", k, ok)
	}
	if k, ok := CohenKappa([]bool{true, false}, []bool{false, true}); !ok || k != -1 {
		t.Errorf("opposite: %v %v", k, ok)
	}
	// Both raters constant and equal: undefined.
	if _, ok := CohenKappa([]bool{true, true}, []bool{true, true}); ok {
		t.Error("constant raters: κ defined")
	}
	// Three trials: pairs (1,2) κ=1, (1,3) and (2,3) κ=-1 → mean -1/3.
	k, ok := TrialKappa([][]bool{{true, false}, {true, false}, {false, true}})
	if !ok || !near(k, -1.0/3, 1e-12) {
		t.Errorf("trial κ = %v %v", k, ok)
	}
	if _, ok := TrialKappa([][]bool{{true}}); ok {
		t.Error("one trial: κ defined")
	}
}

// The χ² branch with b = c: no evidence of a difference, χ² = 0 and p = 1.
// Without the max(0, |b−c|−1) guard, (|0|−1)² gave χ² = 1/26, p = 0.84.
func TestMcNemarChiSquareGuard(t *testing.T) {
	r := McNemar(13, 13)
	if r.Method != McNemarChi2 || r.Statistic != 0 || r.P != 1 {
		t.Errorf("McNemar(13, 13) = %+v, want χ² 0, p 1", r)
	}
	// Exact below 25 discordant: 0 vs 8, p = 2·(½)⁸ = 0.0078125 (the
	// issue's per-scenario figure for 8 scenarios only rein solved).
	if r := McNemar(0, 8); r.Method != McNemarExact || !near(r.P, 0.0078125, 1e-15) {
		t.Errorf("McNemar(0, 8) = %+v", r)
	}
}

// One outcome per scenario: a strict majority of its trials.
func TestScenarioOutcome(t *testing.T) {
	for _, c := range []struct {
		s, k int
		want bool
	}{{2, 3, true}, {1, 3, false}, {3, 3, true}, {1, 2, false}, {2, 2, true}, {0, 1, false}, {1, 1, true}} {
		if got := ScenarioOutcome(c.s, c.k); got != c.want {
			t.Errorf("%d of %d: %v", c.s, c.k, got)
		}
	}
}

// Wilson's interval by hand: 0 of 4 is [0, z²/(4+z²)] = [0, 0.48989],
// never the zero-width [0, 0] a percentile bootstrap gives.
func TestWilsonHandValues(t *testing.T) {
	iv := Wilson(0, 4)
	if iv.Low != 0 || !near(iv.High, 0.489891, 1e-6) {
		t.Errorf("Wilson(0, 4) = %+v", iv)
	}
	if iv := Wilson(1, 4); iv.High != 1 || !near(iv.Low, 1-0.489891, 1e-6) {
		t.Errorf("Wilson(1, 4) = %+v", iv)
	}
	// ½ of 10: centre ½, half-width z/(1+z²/10)·√(1/40 + z²/400).
	if iv := Wilson(0.5, 10); !near(iv.Low, 0.236593, 1e-6) || !near(iv.High, 0.763407, 1e-6) {
		t.Errorf("Wilson(0.5, 10) = %+v", iv)
	}
}

// Fleiss' κ by hand: 4 scenarios, 3 trials, successes 3, 0, 2, 1: P_i =
// 1, 1, ⅓, ⅓ (P̄ = ⅔), p✓ = ½ (Pe = ½), κ = (⅔ − ½)/½ = ⅓.
func TestFleissKappaHandValue(t *testing.T) {
	if k, ok := FleissKappa([]int{3, 0, 2, 1}, 3); !ok || !near(k, 1.0/3, 1e-12) {
		t.Errorf("κ %v %v, want ⅓", k, ok)
	}
	if k, ok := FleissKappa([]int{3, 0, 3, 0}, 3); !ok || !near(k, 1, 1e-12) {
		t.Errorf("perfect agreement: κ %v %v", k, ok)
	}
	if _, ok := FleissKappa([]int{0, 0}, 3); ok {
		t.Error("every rating the same: κ must be undefined")
	}
	if _, ok := FleissKappa([]int{1, 0}, 1); ok {
		t.Error("one trial: κ must be undefined")
	}
}

// The cluster bootstrap resamples whole tasks: two tasks of three
// scenarios each, all 1 and all 0, give resample means of 0, ½ or 1 only
// (a bootstrap over the six scenarios would give sixths), so the interval
// is [0, 1]; one task gives the point.
func TestClusterBootstrapResamplesTasks(t *testing.T) {
	iv := ClusterBootstrapMean([]Cluster{{1, 1, 1}, {0, 0, 0}}, 2000, BootstrapSeed)
	if iv.Value != 0.5 || iv.Low != 0 || iv.High != 1 {
		t.Errorf("interval %+v, want 0.5 [0, 1]", iv)
	}
	naive := BootstrapMean([]float64{1, 1, 1, 0, 0, 0}, 2000, BootstrapSeed)
	if naive.Low <= 0 || naive.High >= 1 {
		t.Errorf("the scenario bootstrap %+v was expected narrower: the test no longer shows the difference", naive)
	}
	if iv := ClusterBootstrapMean([]Cluster{{1, 0}}, 2000, BootstrapSeed); iv.Low != 0.5 || iv.High != 0.5 {
		t.Errorf("one cluster: %+v", iv)
	}
}

// A Δ whose bootstrap has no width is bounded by the share of scenarios
// that differ instead: none of 4 differs, so |Δ| ≤ Wilson's upper bound of
// 0/4, 3.8416/7.8416 = 0.48990 (the code before printed [0, 0]); all 4
// better by 1, so Δ = 1 and its lower end is 1 − … clipped by the bound of
// 4/4 = 1: [−1, 1] holds the point.
func TestDeltaIntervalNeverOfZeroWidth(t *testing.T) {
	same := []Cluster{{0}, {0}, {0}, {0}}
	iv := deltaInterval(same, ReportOptions{Resamples: 200, Seed: 1})
	if iv.Method != MethodDiscordanceBound || iv.Value != 0 || !near(iv.High, 0.489898, 1e-5) || !near(iv.Low, -0.489898, 1e-5) {
		t.Errorf("no scenario differs: %+v, want ±0.48990", iv)
	}
	all := []Cluster{{1}, {1}, {1}, {1}}
	if iv := deltaInterval(all, ReportOptions{Resamples: 200, Seed: 1}); iv.High-iv.Low <= 0 || iv.Value != 1 || iv.High != 1 {
		t.Errorf("all better: %+v", iv)
	}
	mixed := []Cluster{{1}, {0}, {1}, {0}, {0}}
	if iv := deltaInterval(mixed, ReportOptions{Resamples: 200, Seed: 1}); iv.Method != MethodClusterBootstrap {
		t.Errorf("a bootstrap with width is kept: %+v", iv)
	}
}

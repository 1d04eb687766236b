package eval

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synthetic is a small run: S1 (airline task 0, anaphora, seen), S2
// (retail task 0, unsupported_domain, unseen) and S3 (airline task 1,
// clean), four conditions, two trials. Outcomes (trial 1, trial 2):
//
//	           S1     S2     S3
//	rein       ✓ ✓    ✓ ✗    ✓ ✓
//	none       ✗ ✗    ✗ ✗    ✓ ✓
//	npi        ✓ ✗    ✗ ✗    ✓ ✓
//	self-ref.  ✗ ✓    ✓ ✓    ✗ ✗
//
// rein judges one turn per play; it activates on S1 in both trials
// (naming anaphora, then contradiction: credited, then false), on S2 in
// trial 1 (unsupported_domain, credited) and on S3 in trial 1 (false).
// self-refine transfers on S3 in trial 1. Every play has 4 user turns and
// 400 agent tokens; rein's plays add 100 inception tokens; rein's agent
// latencies are 100 and 300 ms, inception 20 ms and rein's own 5 ms.
func synthetic() []Result {
	type sc struct {
		id, domain, et string
		task           int
		seen           bool
	}
	s1 := sc{"S1", "airline", TypeAnaphora, 0, true}
	s2 := sc{"S2", "retail", TypeUnsupportedDomain, 0, false}
	s3 := sc{"S3", "airline", TypeNone, 1, true}
	outcomes := map[string][3][2]bool{
		"rein":        {{true, true}, {true, false}, {true, true}},
		"none":        {{false, false}, {false, false}, {true, true}},
		"npi":         {{true, false}, {false, false}, {true, true}},
		"self-refine": {{false, true}, {true, true}, {false, false}},
	}
	var out []Result
	for cond, o := range outcomes {
		for i, s := range []sc{s1, s2, s3} {
			for t := range 2 {
				r := Result{Condition: cond, ScenarioID: s.id, TaskID: s.task, Domain: s.domain, ErrorType: s.et, Seen: s.seen,
					Trial: t + 1, Success: o[i][t], UserTurns: 4, AgentTokens: 400, ActivationTurns: []int{}}
				if cond == "rein" {
					r.InceptionTokens = 100
					r.JudgedTurns = 1
					r.AgentLatencyMs = []float64{100, 300}
					r.InceptionLatencyMs = []float64{20}
					r.ReinLatencyMs = []float64{5}
					activate := func(et string, credited bool) {
						r.ActivationTurns, r.ActivationTypes = []int{2}, []string{et}
						if credited {
							r.CreditedActivations = 1
						} else {
							r.FalseActivations = 1
						}
					}
					switch {
					case s.id == "S1":
						r.Activated, r.DetectedType = true, []string{TypeAnaphora, TypeContradiction}[t]
						activate(r.DetectedType, t == 0)
					case s.id == "S2" && t == 0:
						r.Activated, r.DetectedType = true, TypeUnsupportedDomain
						activate(r.DetectedType, true)
					case s.id == "S3" && t == 0:
						activate(TypeAnaphora, false)
					}
				}
				if cond == "self-refine" && s.id == "S3" && t == 0 {
					r.Transferred = true
				}
				out = append(out, r)
			}
		}
	}
	return out
}

func f(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// Wilson intervals of the synthetic run, computed by hand from
// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964.
const (
	wilson075of2Low  = 0.197867
	wilson075of2High = 0.973323
	wilson0of2High   = 0.657620 // z²/(2 + z²)
)

// The headline is over the error scenarios only (S1, S2); the clean one
// (S3) is reported apart. On the code before, Pass@1 mixed S3 in (none
// showed 0.5/3 while it solved no error scenario), McNemar paired every
// trial, and a slice of two scenarios had a percentile interval.
func TestReportOfASyntheticRunHasTheHandComputedFigures(t *testing.T) {
	rep, err := Report(synthetic(), ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Trials != 2 || rep.Scenarios != 3 || len(rep.Conditions) != 4 {
		t.Fatalf("trials %d scenarios %d conditions %d", rep.Trials, rep.Scenarios, len(rep.Conditions))
	}
	if got := strings.Join(rep.ConditionNames(), ","); got != "none,rein,npi,self-refine" {
		t.Fatalf("conditions %s", got)
	}
	const eps = 1e-12
	type want struct {
		pass1, pass2, kappa float64 // kappa -1: undefined
		delta               float64 // -9: none
	}
	for cond, w := range map[string]want{
		// rein: (1 + ½)/2; pass^2 (1+0)/2; Fleiss κ: P̄ = (1+0)/2, p✓ = ¾,
		// Pe = 10/16, κ = (½ − ⅝)/⅜ = −⅓; Δ = ((1−0) + (½−0))/2.
		"rein": {0.75, 0.5, -1.0 / 3, 0.75},
		// none: solved no error scenario; every rating ✗: κ undefined.
		"none":        {0, 0, -1, -9},
		"npi":         {0.25, 0, -1.0 / 3, 0.25},
		"self-refine": {0.75, 0.5, -1.0 / 3, 0.75},
	} {
		m := rep.Conditions[cond].Metrics
		if m.Scenarios != 2 || m.Tasks != 2 {
			t.Errorf("%s: %d scenarios on %d tasks, want the 2 error scenarios on 2 tasks", cond, m.Scenarios, m.Tasks)
		}
		if !near(m.PassAt1.Value, w.pass1, eps) || !near(m.PassHatK["1"], w.pass1, eps) || !near(m.PassHatK["2"], w.pass2, eps) {
			t.Errorf("%s: pass@1 %v pass^k %v, want %v and %v", cond, m.PassAt1, m.PassHatK, w.pass1, w.pass2)
		}
		if m.PassAt1.Method != MethodWilson || m.PassAt1.High-m.PassAt1.Low <= 0 {
			t.Errorf("%s: a slice of 2 scenarios has interval %+v, want Wilson's, never of zero width", cond, m.PassAt1)
		}
		if w.kappa == -1 {
			if m.Kappa != nil {
				t.Errorf("%s: κ %v, want undefined", cond, *m.Kappa)
			}
		} else if !near(f(m.Kappa), w.kappa, eps) {
			t.Errorf("%s: κ %v, want %v", cond, f(m.Kappa), w.kappa)
		}
		if w.delta == -9 {
			if m.DeltaVsNone != nil || m.McNemarP != nil {
				t.Errorf("none is compared with itself")
			}
			continue
		}
		if m.DeltaVsNone == nil || !near(m.DeltaVsNone.Value, w.delta, eps) {
			t.Errorf("%s: Δ %+v, want %v", cond, m.DeltaVsNone, w.delta)
		}
	}
	// Pass@1 = ¾ over 2 scenarios and 0 over 2: Wilson's intervals.
	if iv := rep.Conditions["rein"].PassAt1; !near(iv.Low, wilson075of2Low, 1e-5) || !near(iv.High, wilson075of2High, 1e-5) {
		t.Errorf("rein interval %+v, want [%v, %v]", iv, wilson075of2Low, wilson075of2High)
	}
	if iv := rep.Conditions["none"].PassAt1; iv.Low != 0 || !near(iv.High, wilson0of2High, 1e-5) {
		t.Errorf("none interval %+v, want [0, %v]", iv, wilson0of2High)
	}
	// Δ rein − none resamples the two tasks: means 1, ¾ or ½ (¼, ½, ¼);
	// with 2000 resamples the quantiles fall on ½ and 1.
	if d := rep.Conditions["rein"].DeltaVsNone; d.Low != 0.5 || d.High != 1 || d.Method != MethodClusterBootstrap {
		t.Errorf("rein Δ %+v, want [0.5, 1]", d)
	}
	// McNemar on one outcome per scenario (a strict majority of 2 trials:
	// S1 ✓, S2 ✗ for rein; none ✗ ✗): 1 discordant scenario, p = 1. The
	// code before paired each trial (3 discordant plays, p = 0.25).
	if m := rep.Conditions["rein"].McNemar; m == nil || m.Only != 1 || m.Other != 0 || m.P != 1 || m.Method != McNemarExact {
		t.Errorf("rein McNemar %+v, want 1/0, p 1", m)
	}
	// Trial 1 vs trial 2 for rein: S2 ✓ then ✗: 1/0, p = 1.
	if m := rep.Conditions["rein"].RunVsRun; m == nil || m.Only != 1 || m.Other != 0 || m.P != 1 {
		t.Errorf("rein run vs run %+v", m)
	}

	rein := rep.Conditions["rein"]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"activation", f(rein.ActivationRate), 0.75},                       // 3 of 4 error plays
		{"exact type", f(rein.ExactTypeRate), 0.5},                         // 2 of 4
		{"precision", f(rein.ActivationPrecision), 2.0 / 3},                // 2 credited of 3
		{"recall", f(rein.ActivationRecall), 0.5},                          // 2 of 4 error plays
		{"false activation", f(rein.FalseActivationRate), 0.25},            // 1 wrong type per 4 judged turns
		{"clean false activation", f(rein.Clean.FalseActivationRate), 0.5}, // 1 per 2 judged clean turns
		{"clean pass@1", rein.Clean.PassAt1.Value, 1},
		{"rein broke", float64(rein.Clean.Broke), 0},
		{"self-refine broke", float64(rep.Conditions["self-refine"].Clean.Broke), 1},
		{"self-refine over-deferral", f(rep.Conditions["self-refine"].Clean.OverDeferralRate), 0.5},
		{"none activation", f(rep.Conditions["none"].ActivationRate), 0},
		{"agent tokens/turn", rein.TokensPerTurn.Agent, 100}, // 1600 / 16
		{"inception tokens/turn", rein.TokensPerTurn.Inception, 25},
		{"tokens per success", f(rein.TokensPerSuccess), 2000.0 / 3}, // 4 × 500 over 3 successes
		{"agent p50", rein.LatencyMsP50.Agent, 200},
		{"agent p95", rein.LatencyMsP95.Agent, 300},
		{"inception p50", rein.LatencyMsP50.Inception, 20},
		{"rein p50", rein.LatencyMsP50.Rein, 5},
		{"anaphora pass@1", rein.ByErrorType[TypeAnaphora].PassAt1.Value, 1},
		{"anaphora activation", f(rein.ByErrorType[TypeAnaphora].ActivationRate), 1},
		{"anaphora exact", f(rein.ByErrorType[TypeAnaphora].ExactTypeRate), 0.5},
		{"unsupported_domain pass@1", rein.ByErrorType[TypeUnsupportedDomain].PassAt1.Value, 0.5},
		{"airline pass@1", rein.ByDomain["airline"].PassAt1.Value, 1},
		{"retail pass@1", rein.ByDomain["retail"].PassAt1.Value, 0.5},
		{"unseen activation", f(rein.BySeen["unseen"].ActivationRate), 0.5},
		{"ambiguous/seen pass@1", rein.ByCategorySeen["ambiguous/seen"].PassAt1.Value, 1},
		{"unsupported/unseen pass@1", rein.ByCategorySeen["unsupported/unseen"].PassAt1.Value, 0.5},
	}
	for _, c := range checks {
		if !near(c.got, c.want, eps) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if rein.ByErrorType[TypeNone] != nil || rein.BySeen[CategoryClean] != nil {
		t.Error("a clean slice in the error-only breakdowns")
	}
	// 3 conditions × (overall + 8 slices) McNemar tests: the report warns.
	if rep.Tests != 27 || !strings.Contains(rep.MultipleTests, "27 McNemar tests") {
		t.Errorf("tests %d, note %q", rep.Tests, rep.MultipleTests)
	}
	// Deterministic: the same results give the same report.
	again, _ := Report(synthetic(), ReportOptions{})
	a, _ := rep.JSON()
	b, _ := again.JSON()
	if !bytes.Equal(a, b) {
		t.Error("report.json differs between two builds from the same results")
	}
}

func TestWriteReportFilesAndCharts(t *testing.T) {
	rep, err := Report(synthetic(), ReportOptions{Note: "scripted figures measure the harness, not a model"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteReport(dir, rep); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	conds := doc["conditions"].(map[string]any)
	for _, c := range Conditions {
		cr, ok := conds[c].(map[string]any)
		if !ok {
			t.Fatalf("report.json lacks condition %s", c)
		}
		for _, key := range []string{"pass_at_1", "pass_hat_k", "activation_rate", "false_activation_rate", "over_deferral_rate",
			"tokens_per_turn", "latency_ms_p50", "kappa", "by_error_type", "by_domain", "by_seen"} {
			if _, ok := cr[key]; !ok {
				t.Errorf("%s lacks %s", c, key)
			}
		}
		p1 := cr["pass_at_1"].(map[string]any)
		for _, k := range []string{"value", "ci_low", "ci_high"} {
			if _, ok := p1[k]; !ok {
				t.Errorf("%s pass_at_1 lacks %s", c, k)
			}
		}
		if _, ok := cr["mcnemar_p"]; ok != (c != ConditionNone) {
			t.Errorf("%s: mcnemar_p present %v", c, ok)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	for _, want := range []string{"| rein | +0.750 [+0.500, +1.000] | 0.750 [0.198, 0.973]", "## Headline: error scenarios only", "## Clean scenarios: conversations rein broke", "| self-refine | 0.000 [0.000, 0.793] | 1 (S3)", "## By error type", "| anaphora |", "not a model"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	for _, name := range []string{ChartPassAt1, ChartActivationType} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		root := parseXML(t, name, data)
		if root != "svg" {
			t.Errorf("%s: root element %q", name, root)
		}
	}
}

// parseXML reads every token of data and returns the root element's name.
func parseXML(t *testing.T, name string, data []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return root
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", name, err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
}

func TestReportRejectsInconsistentResults(t *testing.T) {
	base := synthetic()
	cases := map[string]func([]Result) []Result{
		"empty":           func([]Result) []Result { return nil },
		"duplicate trial": func(rs []Result) []Result { rs[1].Trial = 1; return rs },
		"uneven trials":   func(rs []Result) []Result { return rs[1:] },
		"unknown type":    func(rs []Result) []Result { rs[0].ErrorType = "typo"; return rs },
		"meta disagreement": func(rs []Result) []Result {
			for i := range rs {
				if rs[i].ScenarioID == "S1" && rs[i].Condition == "npi" {
					rs[i].Domain = "retail"
				}
			}
			return rs
		},
	}
	for name, mutate := range cases {
		rs := mutate(append([]Result(nil), base...))
		if _, err := Report(rs, ReportOptions{}); !errors.Is(err, ErrInvalidResults) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCompareSideBySide(t *testing.T) {
	a, err := Report(synthetic(), ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := synthetic()
	for i := range rs { // run B: rein also passes S2 in trial 2
		if rs[i].Condition == "rein" && rs[i].ScenarioID == "S2" {
			rs[i].Success = true
		}
	}
	b, err := Report(rs, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := Compare(a, b, "before", "after")
	var found bool
	for _, r := range c.Rows {
		if r.Condition == "rein" && r.Slice == "all" {
			found = true
			if r.DeltaPassAt1 == nil || !near(*r.DeltaPassAt1, 0.25, 1e-12) {
				t.Errorf("rein delta %v, want ¼ (S2's ½ over the two error scenarios)", r.DeltaPassAt1)
			}
		}
		if r.Condition == "none" && r.Slice == "all" && (r.DeltaPassAt1 == nil || *r.DeltaPassAt1 != 0) {
			t.Errorf("none changed: %v", r.DeltaPassAt1)
		}
	}
	if !found {
		t.Fatal("no rein/all row")
	}
	md := c.Markdown()
	if !strings.Contains(md, "Pass@1 before") || !strings.Contains(md, "| rein | all | 0.750") || !strings.Contains(md, "+0.250") {
		t.Errorf("comparison table:\n%s", md)
	}
	// A condition present in one run only still gets its row.
	delete(b.Conditions, "npi")
	c = Compare(a, b, "a", "b")
	for _, r := range c.Rows {
		if r.Condition == "npi" && r.Slice == "all" && (r.A == nil || r.B != nil || r.DeltaPassAt1 != nil) {
			t.Errorf("npi row %+v", r)
		}
	}
}

// A clean scenario's result carries no error type (results.jsonl says ""),
// and a report reads it, and an older run's "none", as clean alike.
func TestCleanResultHasNoErrorType(t *testing.T) {
	r := NewResult(ConditionNone, Scenario{ID: "c", Domain: "airline", ErrorType: TypeNone}, 1, Verdict{})
	if r.ErrorType != "" {
		t.Fatalf("clean result's error type %q, want empty", r.ErrorType)
	}
	old, err := Report(synthetic(), ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := synthetic()
	for i := range rs {
		if rs[i].ErrorType == TypeNone {
			rs[i].ErrorType = ""
		}
	}
	now, err := Report(rs, ReportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(old)
	b, _ := json.Marshal(now)
	if !bytes.Equal(a, b) {
		t.Errorf("reports differ with \"\" for clean:\n%s\n%s", a, b)
	}
}

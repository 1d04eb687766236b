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

// synthetic is a small run: S1 (airline anaphora, seen), S2 (retail
// unsupported_domain, unseen) and S3 (airline clean), four conditions, two
// trials. Outcomes (trial 1, trial 2):
//
//	           S1     S2     S3
//	rein       ✓ ✓    ✓ ✗    ✓ ✓
//	none       ✗ ✗    ✗ ✗    ✓ ✗
//	npi        ✓ ✗    ✗ ✗    ✓ ✓
//	self-ref.  ✗ ✓    ✓ ✓    ✗ ✗
//
// rein activates on S1 in both trials (naming anaphora, then
// contradiction) and on S2 in trial 1 (unsupported_domain); on S3 it
// activates once over 8 user turns. self-refine transfers on S3 in trial 1.
// Every play has 4 user turns and 400 agent tokens; rein's plays add 100
// inception tokens; rein's agent latencies are 100 and 300 ms, inception
// 20 ms and rein's own 5 ms.
func synthetic() []Result {
	type sc struct {
		id, domain, et string
		seen           bool
	}
	s1 := sc{"S1", "airline", TypeAnaphora, true}
	s2 := sc{"S2", "retail", TypeUnsupportedDomain, false}
	s3 := sc{"S3", "airline", TypeNone, true}
	outcomes := map[string][3][2]bool{
		"rein":        {{true, true}, {true, false}, {true, true}},
		"none":        {{false, false}, {false, false}, {true, false}},
		"npi":         {{true, false}, {false, false}, {true, true}},
		"self-refine": {{false, true}, {true, true}, {false, false}},
	}
	var out []Result
	for cond, o := range outcomes {
		for i, s := range []sc{s1, s2, s3} {
			for t := range 2 {
				r := Result{Condition: cond, ScenarioID: s.id, Domain: s.domain, ErrorType: s.et, Seen: s.seen,
					Trial: t + 1, Success: o[i][t], UserTurns: 4, AgentTokens: 400}
				if cond == "rein" {
					r.InceptionTokens = 100
					r.AgentLatencyMs = []float64{100, 300}
					r.InceptionLatencyMs = []float64{20}
					r.ReinLatencyMs = []float64{5}
					switch {
					case s.id == "S1":
						r.Activated, r.DetectedType = true, []string{TypeAnaphora, TypeContradiction}[t]
					case s.id == "S2" && t == 0:
						r.Activated, r.DetectedType = true, TypeUnsupportedDomain
					case s.id == "S3" && t == 0:
						r.FalseActivations = 1
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
		pass1, pass2, kappa, mcnemar float64 // mcnemar -1: none
		only, onlyRein               int
	}
	for cond, w := range map[string]want{
		// rein: (1 + ½ + 1)/3; pass^2 (1+0+1)/3; κ: trial 1 (✓✓✓) vs 2
		// (✓✗✓), po = pe = 2/3, κ = 0.
		"rein": {2.5 / 3, 2.0 / 3, 0, -1, 0, 0},
		// none: (0+0+½)/3; κ 0; vs rein 0 and 4 discordant: p = 2/16.
		"none": {0.5 / 3, 0, 0, 0.125, 0, 4},
		// npi: (½+0+1)/3; pass^2 1/3; κ (2/3-4/9)/(5/9) = 0.4; 0 vs 2: p = ½.
		"npi": {1.5 / 3, 1.0 / 3, 0.4, 0.5, 0, 2},
		// self-refine: (½+1+0)/3; pass^2 1/3; κ 0.4; 1 vs 3: p = 2·5/16.
		"self-refine": {1.5 / 3, 1.0 / 3, 0.4, 0.625, 1, 3},
	} {
		m := rep.Conditions[cond].Metrics
		if !near(m.PassAt1.Value, w.pass1, eps) || !near(m.PassHatK["1"], w.pass1, eps) || !near(m.PassHatK["2"], w.pass2, eps) {
			t.Errorf("%s: pass@1 %v pass^k %v, want %v and %v", cond, m.PassAt1, m.PassHatK, w.pass1, w.pass2)
		}
		if m.PassAt1.Low > m.PassAt1.Value || m.PassAt1.High < m.PassAt1.Value {
			t.Errorf("%s: interval %+v does not hold its value", cond, m.PassAt1)
		}
		if !near(f(m.Kappa), w.kappa, eps) {
			t.Errorf("%s: κ %v, want %v", cond, f(m.Kappa), w.kappa)
		}
		if w.mcnemar < 0 {
			if m.McNemarP != nil {
				t.Errorf("rein has a McNemar p against itself")
			}
		} else if !near(f(m.McNemarP), w.mcnemar, eps) || m.McNemar.Only != w.only || m.McNemar.OnlyRein != w.onlyRein || m.McNemar.Method != McNemarExact {
			t.Errorf("%s: McNemar %v %+v, want p %v (%d/%d)", cond, f(m.McNemarP), m.McNemar, w.mcnemar, w.only, w.onlyRein)
		}
	}
	// rein's pass@1 interval: resample means are ½ (p 1/27), 2/3, 5/6 or 1
	// (p 8/27); with 2000 resamples the 2.5 % and 97.5 % quantiles fall on ½ and 1.
	if iv := rep.Conditions["rein"].PassAt1; iv.Low != 0.5 || iv.High != 1 {
		t.Errorf("rein interval %+v, want [0.5, 1]", iv)
	}

	rein := rep.Conditions["rein"]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"activation", f(rein.ActivationRate), 0.75},             // 3 of 4 error plays
		{"exact type", f(rein.ExactTypeRate), 0.5},               // 2 of 4
		{"false activation", f(rein.FalseActivationRate), 0.125}, // 1 per 8 clean turns
		{"over-deferral", f(rein.OverDeferralRate), 0},
		{"self-refine over-deferral", f(rep.Conditions["self-refine"].OverDeferralRate), 0.5},
		{"none activation", f(rep.Conditions["none"].ActivationRate), 0},
		{"agent tokens/turn", rein.TokensPerTurn.Agent, 100}, // 2400 / 24
		{"inception tokens/turn", rein.TokensPerTurn.Inception, 25},
		{"agent p50", rein.LatencyMsP50.Agent, 200},
		{"inception p50", rein.LatencyMsP50.Inception, 20},
		{"rein p50", rein.LatencyMsP50.Rein, 5},
		{"anaphora pass@1", rein.ByErrorType[TypeAnaphora].PassAt1.Value, 1},
		{"anaphora activation", f(rein.ByErrorType[TypeAnaphora].ActivationRate), 1},
		{"anaphora exact", f(rein.ByErrorType[TypeAnaphora].ExactTypeRate), 0.5},
		{"unsupported_domain pass@1", rein.ByErrorType[TypeUnsupportedDomain].PassAt1.Value, 0.5},
		{"airline pass@1", rein.ByDomain["airline"].PassAt1.Value, 1},
		{"retail pass@1", rein.ByDomain["retail"].PassAt1.Value, 0.5},
		{"unseen activation", f(rein.BySeen["unseen"].ActivationRate), 0.5},
		{"clean false activation", f(rein.BySeen["clean"].FalseActivationRate), 0.125},
		// none vs rein on anaphora only: 0 vs 2 discordant, p = ½.
		{"none anaphora McNemar", f(rep.Conditions["none"].ByErrorType[TypeAnaphora].McNemarP), 0.5},
	}
	for _, c := range checks {
		if !near(c.got, c.want, eps) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if rein.ByErrorType[TypeNone].ActivationRate != nil || rein.ByErrorType[TypeAnaphora].FalseActivationRate != nil {
		t.Error("a rate with nothing to measure is not null")
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
		if _, ok := cr["mcnemar_p"]; ok != (c != ConditionRein) {
			t.Errorf("%s: mcnemar_p present %v", c, ok)
		}
	}
	md, _ := os.ReadFile(filepath.Join(dir, ReportMarkdown))
	for _, want := range []string{"| rein | 0.833 [0.500, 1.000]", "## By error type", "| anaphora |", "not a model"} {
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
			if r.DeltaPassAt1 == nil || !near(*r.DeltaPassAt1, 0.5/3, 1e-12) {
				t.Errorf("rein delta %v, want 1/6", r.DeltaPassAt1)
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
	if !strings.Contains(md, "Pass@1 before") || !strings.Contains(md, "| rein | all | 0.833") || !strings.Contains(md, "+0.167") {
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

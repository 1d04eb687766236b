package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Files WriteReport writes into a run directory.
const (
	ReportJSON          = "report.json"
	ReportMarkdown      = "report.md"
	ChartPassAt1        = "pass_at_1.svg"
	ChartActivationType = "activation_by_type.svg"
)

// JSON renders report.json (indented, keys in a stable order).
func (r *RunReport) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("report json: %w", err)
	}
	return append(b, '\n'), nil
}

// WriteReport writes report.json, report.md and the two SVG charts into dir.
func WriteReport(dir string, r *RunReport) error {
	js, err := r.JSON()
	if err != nil {
		return err
	}
	pass, err := PassAt1Chart(r)
	if err != nil {
		return err
	}
	act, err := ActivationChart(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for name, data := range map[string][]byte{
		ReportJSON: js, ReportMarkdown: []byte(r.Markdown()),
		ChartPassAt1: pass, ChartActivationType: act,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}

// Markdown renders report.md: the overall table per condition, then
// Pass@1 and activation broken down by error type, domain and seen status.
func (r *RunReport) Markdown() string {
	var b strings.Builder
	conds := r.ConditionNames()
	fmt.Fprintf(&b, "# rein eval report\n\n%d scenarios, %d trials each. Intervals: %.0f %% %s, %d resamples, seed %d.\n\n",
		r.Scenarios, r.Trials, r.Bootstrap.Level*100, r.Bootstrap.Method, r.Bootstrap.Resamples, r.Bootstrap.Seed)
	if r.Note != "" {
		fmt.Fprintf(&b, "> %s\n\n", r.Note)
	}
	b.WriteString("## Overall\n\n")
	b.WriteString("| condition | Pass@1 [95 % CI] | pass^k | activation | exact type | false activation / clean turn | over-deferral | McNemar p vs rein | κ | tokens/turn agent · inception · user | p50 ms agent · inception · rein |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range conds {
		m := r.Conditions[c].Metrics
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.1f · %.1f · %.1f | %.0f · %.0f · %.1f |\n",
			c, fmtInterval(m.PassAt1), fmtPassHat(m.PassHatK, r.Trials), fmtRate(m.ActivationRate), fmtRate(m.ExactTypeRate),
			fmtRate(m.FalseActivationRate), fmtRate(m.OverDeferralRate), fmtP(m.McNemarP, m.McNemar), fmtKappa(m.Kappa),
			m.TokensPerTurn.Agent, m.TokensPerTurn.Inception, m.TokensPerTurn.User, m.LatencyMsP50.Agent, m.LatencyMsP50.Inception, m.LatencyMsP50.Rein)
	}
	for _, sec := range []struct {
		title string
		pick  func(*ConditionReport) map[string]*Metrics
	}{
		{"By error type", func(c *ConditionReport) map[string]*Metrics { return c.ByErrorType }},
		{"By domain", func(c *ConditionReport) map[string]*Metrics { return c.ByDomain }},
		{"Seen and unseen types", func(c *ConditionReport) map[string]*Metrics { return c.BySeen }},
	} {
		keys := map[string]bool{}
		for _, c := range conds {
			for k := range sec.pick(r.Conditions[c]) {
				keys[k] = true
			}
		}
		ordered := orderKeys(keys)
		fmt.Fprintf(&b, "\n## %s\n\nPass@1 [95 %% CI] · activation (false activation on clean turns) · McNemar p vs rein\n\n| slice |", sec.title)
		for _, c := range conds {
			fmt.Fprintf(&b, " %s |", c)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(conds)) + "\n")
		for _, k := range ordered {
			fmt.Fprintf(&b, "| %s |", k)
			for _, c := range conds {
				m := sec.pick(r.Conditions[c])[k]
				if m == nil {
					b.WriteString(" – |")
					continue
				}
				act := fmtRate(m.ActivationRate)
				if k == TypeNone || k == CategoryClean {
					act = "(" + fmtRate(m.FalseActivationRate) + ")"
				}
				fmt.Fprintf(&b, " %s · %s · %s |", fmtInterval(m.PassAt1), act, fmtP(m.McNemarP, m.McNemar))
			}
			b.WriteString("\n")
		}
	}
	b.WriteString(`
## What the numbers mean

- **Pass@1**: the mean over scenarios of the fraction of trials that met the scenario's success
  criterion (ambiguous types: ambiguity_report and the task's τ-bench reward 1; unsupported types: a
  transfer to a human and no state-changing tool from the error turn on; clean: reward 1).
- **pass^k**: τ-bench's pass^k, the chance that k trials of a scenario all succeed (k = 1 … trials).
- **activation**: error-scenario plays where the inception module activated at the error turn;
  **exact type**: those where it named the planted type.
- **false activation**: activations per user turn of clean scenarios; **over-deferral**: clean plays
  that transferred to a human.
- **McNemar p**: paired test of the condition against rein on the same scenarios and trials (exact
  binomial under 25 discordant pairs, chi-square with continuity correction otherwise).
- **κ**: Cohen's κ between trials (mean over pairs of trials): how repeatable the outcomes are.
- **tokens/turn**: model tokens (input + output) per user turn of the agent, the inception module
  and the user simulator (the harness's own cost). A call whose response reports no usage (the
  scripted simulators, a server that does not count) is counted with an estimate, one token per
  four characters of request and answer; the rules module calls no model and costs 0.
- **p50 ms**: median latency of the agent's and the inception module's model calls, and rein's own
  added latency per turn.
`)
	return b.String()
}

// orderKeys sorts slice keys: error types in taxonomy order, then none,
// then the rest alphabetically (domains, seen/unseen/clean).
func orderKeys(keys map[string]bool) []string {
	rank := func(k string) int {
		if i := slices.Index(ErrorTypes, k); i >= 0 {
			return i
		}
		if i := slices.Index([]string{TypeNone, "seen", "unseen", CategoryClean}, k); i >= 0 {
			return len(ErrorTypes) + i
		}
		return 100
	}
	out := make([]string, 0, len(keys))
	for k := range keys {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return out
}

func fmtInterval(iv Interval) string {
	return fmt.Sprintf("%.3f [%.3f, %.3f]", iv.Value, iv.Low, iv.High)
}

func fmtRate(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f", *p)
}

func fmtKappa(p *float64) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *p)
}

func fmtP(p *float64, m *McNemarJSON) string {
	if p == nil || m == nil {
		return "–"
	}
	return fmt.Sprintf("%.3g (%d/%d)", *p, m.Only, m.OnlyRein)
}

func fmtPassHat(ph map[string]float64, trials int) string {
	var parts []string
	for k := 1; k <= trials; k++ {
		if v, ok := ph[fmt.Sprint(k)]; ok {
			parts = append(parts, fmt.Sprintf("%.3f", v))
		}
	}
	return strings.Join(parts, " · ")
}

// trimTrailingSpace is used by the charts' writers.
func trimTrailingSpace(b []byte) []byte { return bytes.TrimRight(b, " \n") }

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

// Markdown renders report.md: the headline over the error scenarios (Δ
// against none first), the slices by category × seen, the clean
// scenarios apart (conversations rein broke, false activations per judged
// turn), cost and latency, then the breakdowns.
func (r *RunReport) Markdown() string {
	var b strings.Builder
	conds := r.ConditionNames()
	fmt.Fprintf(&b, "# rein eval report\n\n%d scenarios, %d trials each. Intervals: %.0f %%, %s; %d resamples, seed %d.\n\n",
		r.Scenarios, r.Trials, r.Bootstrap.Level*100, r.Bootstrap.Method, r.Bootstrap.Resamples, r.Bootstrap.Seed)
	if r.Note != "" {
		fmt.Fprintf(&b, "> %s\n\n", r.Note)
	}
	b.WriteString("## Headline: error scenarios only\n\n")
	b.WriteString("| condition | Δ Pass@1 vs none [95 % CI] | Pass@1 [95 % CI] | McNemar p vs none (only this/only none) | scenarios · tasks | activation | exact type | precision · recall | κ (Fleiss) | trial 1 vs 2 p |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range conds {
		m := r.Conditions[c].Metrics
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d · %d | %s | %s | %s · %s | %s | %s |\n",
			c, fmtDelta(m.DeltaVsNone), fmtInterval(m.PassAt1), fmtP(m.McNemarP, m.McNemar), m.Scenarios, m.Tasks,
			fmtRate(m.ActivationRate), fmtRate(m.ExactTypeRate), fmtRate(m.ActivationPrecision), fmtRate(m.ActivationRecall),
			fmtKappa(m.Kappa), fmtRunVsRun(m.RunVsRun))
	}
	r.sliceTable(&b, "By category and seen/unseen", func(c *ConditionReport) map[string]*Metrics { return c.ByCategorySeen })
	b.WriteString("\n## Clean scenarios: conversations rein broke\n\n")
	b.WriteString("| condition | clean Pass@1 [95 % CI] | broke (solved by none, failed here) | false activation / judged turn | judged turns | over-deferral |\n|---|---|---|---|---|---|\n")
	for _, c := range conds {
		cf := r.Conditions[c].Clean
		if cf == nil {
			fmt.Fprintf(&b, "| %s | – | – | – | – | – |\n", c)
			continue
		}
		broke := fmt.Sprint(cf.Broke)
		if c == ConditionNone {
			broke = "–"
		} else if len(cf.BrokeIDs) > 0 {
			broke += " (" + strings.Join(cf.BrokeIDs, ", ") + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", c, fmtInterval(cf.PassAt1), broke, fmtRate(cf.FalseActivationRate),
			cf.JudgedTurns, fmtRate(cf.OverDeferralRate))
	}
	b.WriteString("\n## Cost and latency (error scenarios)\n\n")
	b.WriteString("| condition | tokens/turn agent · inception · user | tokens per successful conversation | p50 ms agent · inception · rein | p95 ms agent · inception · rein | fallback decisions | pass^k |\n|---|---|---|---|---|---|---|\n")
	for _, c := range conds {
		m := r.Conditions[c].Metrics
		fmt.Fprintf(&b, "| %s | %.1f · %.1f · %.1f | %s | %.0f · %.0f · %.1f | %.0f · %.0f · %.1f | %d | %s |\n", c,
			m.TokensPerTurn.Agent, m.TokensPerTurn.Inception, m.TokensPerTurn.User, fmtTokens(m.TokensPerSuccess),
			m.LatencyMsP50.Agent, m.LatencyMsP50.Inception, m.LatencyMsP50.Rein, m.LatencyMsP95.Agent, m.LatencyMsP95.Inception, m.LatencyMsP95.Rein,
			m.Fallbacks, fmtPassHat(m.PassHatK, r.Trials))
	}
	r.sliceTable(&b, "By error type", func(c *ConditionReport) map[string]*Metrics { return c.ByErrorType })
	r.sliceTable(&b, "By domain (error scenarios)", func(c *ConditionReport) map[string]*Metrics { return c.ByDomain })
	r.sliceTable(&b, "Seen and unseen types", func(c *ConditionReport) map[string]*Metrics { return c.BySeen })
	if r.MultipleTests != "" {
		fmt.Fprintf(&b, "\n> Many tests: %s\n", r.MultipleTests)
	}
	b.WriteString(`
## What the numbers mean

- **Unit of analysis**: the scenario. Each scenario was played once per trial; the tests take one
  outcome per scenario (success when most of its trials succeeded), never one per trial.
- **Pass@1**: the mean over scenarios of the fraction of trials that met the scenario's success
  criterion (ambiguous types: ambiguity_report and the task's τ-bench reward 1; unsupported types: a
  transfer to a human and no state-changing tool from the error turn on; clean: reward 1). The
  headline is over error scenarios only; clean scenarios are reported apart.
- **Δ vs none**: Pass@1 minus none's on the same scenarios; its interval resamples τ-bench tasks
  (the scenarios of one task move together), paired by scenario.
- **Intervals**: cluster bootstrap over tasks; Wilson's score interval when a slice has fewer than
  30 scenarios or the bootstrap has no width (it never has zero width).
- **pass^k**: τ-bench's pass^k, the chance that k trials of a scenario all succeed (k = 1 … trials).
- **activation**: error-scenario plays where the module activated at the planting point; **exact
  type**: those where it named the planted type; **precision**: activations naming the planted type
  over all activations (clean scenarios' included); **recall**: error plays where the module named
  the planted type at some judged turn.
- **broke**: clean scenarios that none solved (most trials) and this condition failed.
  **false activation**: wrong activations (any on a clean scenario; another type than the planted
  one on an error scenario) per user turn the module judged; **over-deferral**: clean plays that
  transferred to a human.
- **McNemar p**: paired test against none on one outcome per scenario (exact binomial under 25
  discordant scenarios, chi-square with continuity correction otherwise).
- **κ (Fleiss)**: agreement of the trials on each scenario's outcome; **trial 1 vs 2 p**:
  McNemar's test between the first two trials (run-to-run consistency).
- **tokens/turn**: model tokens (input + output) per user turn of the agent, the inception module
  and the user simulator (the harness's own cost); **tokens per successful conversation**: all of
  them over the successful plays. A call whose response reports no usage (the scripted
  simulators, a server that does not count) is counted with an estimate, one token per four
  characters; the rules module calls no model and costs 0.
- **p50/p95 ms**: latency of the agent's and the inception module's model calls, and rein's own
  added latency per turn. **fallback decisions**: turns the cascade decided with its rules
  fallback because the inception model could not judge.
`)
	return b.String()
}

// sliceTable writes one breakdown: per slice and condition, Pass@1, Δ
// against none and activation.
func (r *RunReport) sliceTable(b *strings.Builder, title string, pick func(*ConditionReport) map[string]*Metrics) {
	conds := r.ConditionNames()
	keys := map[string]bool{}
	for _, c := range conds {
		for k := range pick(r.Conditions[c]) {
			keys[k] = true
		}
	}
	fmt.Fprintf(b, "\n## %s\n\nPass@1 [95 %% CI] · Δ vs none · activation · McNemar p vs none\n\n| slice |", title)
	for _, c := range conds {
		fmt.Fprintf(b, " %s |", c)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(conds)) + "\n")
	for _, k := range orderKeys(keys) {
		fmt.Fprintf(b, "| %s |", k)
		for _, c := range conds {
			m := pick(r.Conditions[c])[k]
			if m == nil {
				b.WriteString(" – |")
				continue
			}
			fmt.Fprintf(b, " %s · %s · %s · %s |", fmtInterval(m.PassAt1), fmtDelta(m.DeltaVsNone), fmtRate(m.ActivationRate), fmtP(m.McNemarP, m.McNemar))
		}
		b.WriteString("\n")
	}
}

func fmtDelta(iv *Interval) string {
	if iv == nil {
		return "–"
	}
	return fmt.Sprintf("%+.3f [%+.3f, %+.3f]", iv.Value, iv.Low, iv.High)
}

func fmtRunVsRun(m *McNemarJSON) string {
	if m == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3g (%d/%d)", m.P, m.Only, m.Other)
}

func fmtTokens(p *float64) string {
	if p == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f", *p)
}

// orderKeys sorts slice keys: error types in taxonomy order, then none,
// then the rest alphabetically (domains, seen/unseen/clean).
func orderKeys(keys map[string]bool) []string {
	rank := func(k string) int {
		if i := slices.Index(ErrorTypes, k); i >= 0 {
			return i
		}
		if i := slices.Index([]string{TypeNone, "seen", "unseen", CategoryClean, "ambiguous/seen", "ambiguous/unseen", "unsupported/seen", "unsupported/unseen"}, k); i >= 0 {
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
	return fmt.Sprintf("%.3g (%d/%d)", *p, m.Only, m.Other)
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

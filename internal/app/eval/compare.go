package eval

import (
	"fmt"
	"slices"
	"strings"
)

// Comparison puts two runs side by side (e.g. before and after a taxonomy
// or model change): per condition, overall and per error type.
type Comparison struct {
	A    string          `json:"a"`
	B    string          `json:"b"`
	Rows []ComparisonRow `json:"rows"`
}

// ComparisonRow is one condition × slice ("all" or an error type) in both
// runs; a side is nil when that run has no such slice.
type ComparisonRow struct {
	Condition string   `json:"condition"`
	Slice     string   `json:"slice"`
	A         *Metrics `json:"a"`
	B         *Metrics `json:"b"`
	// DeltaPassAt1 is B's Pass@1 minus A's, when both exist.
	DeltaPassAt1 *float64 `json:"delta_pass_at_1,omitempty"`
}

// Compare lines up run a (named nameA) against run b (nameB).
func Compare(a, b *RunReport, nameA, nameB string) *Comparison {
	c := &Comparison{A: nameA, B: nameB}
	conds := a.ConditionNames()
	for _, name := range b.ConditionNames() {
		if !slices.Contains(conds, name) {
			conds = append(conds, name)
		}
	}
	for _, cond := range conds {
		ca, cb := a.Conditions[cond], b.Conditions[cond]
		row := func(slice string, ma, mb *Metrics) {
			r := ComparisonRow{Condition: cond, Slice: slice, A: ma, B: mb}
			if ma != nil && mb != nil {
				d := mb.PassAt1.Value - ma.PassAt1.Value
				r.DeltaPassAt1 = &d
			}
			c.Rows = append(c.Rows, r)
		}
		row("all", overall(ca), overall(cb))
		keys := map[string]bool{}
		for _, cr := range []*ConditionReport{ca, cb} {
			if cr != nil {
				for k := range cr.ByErrorType {
					keys[k] = true
				}
			}
		}
		for _, k := range orderKeys(keys) {
			row(k, byType(ca, k), byType(cb, k))
		}
	}
	return c
}

func overall(cr *ConditionReport) *Metrics {
	if cr == nil {
		return nil
	}
	return &cr.Metrics
}

func byType(cr *ConditionReport, k string) *Metrics {
	if cr == nil {
		return nil
	}
	return cr.ByErrorType[k]
}

// Markdown renders the comparison as a table.
func (c *Comparison) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s vs %s\n\n", c.A, c.B)
	fmt.Fprintf(&b, "| condition | slice | Pass@1 %[1]s | Pass@1 %[2]s | Δ | activation %[1]s | activation %[2]s | false act. %[1]s | false act. %[2]s |\n", c.A, c.B)
	b.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	side := func(m *Metrics, f func(*Metrics) string) string {
		if m == nil {
			return "–"
		}
		return f(m)
	}
	pass := func(m *Metrics) string { return fmtInterval(m.PassAt1) }
	act := func(m *Metrics) string { return fmtRate(m.ActivationRate) }
	fa := func(m *Metrics) string { return fmtRate(m.FalseActivationRate) }
	for _, r := range c.Rows {
		delta := "–"
		if r.DeltaPassAt1 != nil {
			delta = fmt.Sprintf("%+.3f", *r.DeltaPassAt1)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Condition, r.Slice,
			side(r.A, pass), side(r.B, pass), delta, side(r.A, act), side(r.B, act), side(r.A, fa), side(r.B, fa))
	}
	return b.String()
}

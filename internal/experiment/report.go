package experiment

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/reinception/rein/schemas"
)

// Conversation is what the analysis knows of one conversation in an
// experiment, read from rein's streams (and the platform's feedback).
type Conversation struct {
	ID    string
	Arm   string
	Start time.Time // its first detection: the order the test sees it in
	// Activated: the detector decided to plant on some turn (in control
	// too, where nothing was planted).
	Activated bool
	UserTurns int
	// Unanswered counts user turns with no reply (dev.rein.unanswered.v1).
	Unanswered int
	// EscalationReason is the first escalation's reason, "" without one.
	EscalationReason string
	// RecoveryTool: the agent reported an ambiguity or transferred to a
	// human itself.
	RecoveryTool bool
	// StateChanges counts the agent's state-changing tool calls after the
	// first activation (sidecar conversations have no steps: 0).
	StateChanges int
	// Feedback holds the platform's outcomes: resolved, abandoned,
	// reopened, label-<name>; Satisfaction its 1-5 score (0: none).
	Feedback     map[string]bool
	Satisfaction int
}

// Options tune the analysis.
type Options struct {
	Alpha     float64 // level of the sequential test (default 0.05)
	MinEffect float64 // the smallest effect worth finding, for Needed and tau (default 0.05)
	Holdout   float64 // the control fraction, for Needed (default: observed)
}

func (o *Options) defaults(observed float64) {
	if o.Alpha <= 0 || o.Alpha >= 1 {
		o.Alpha = 0.05
	}
	if o.MinEffect <= 0 {
		o.MinEffect = 0.05
	}
	if o.Holdout <= 0 || o.Holdout >= 1 {
		o.Holdout = observed
	}
}

// ArmCount is one arm's population.
type ArmCount struct {
	Conversations int `json:"conversations"`
	Activated     int `json:"activated"`
}

// Metric is one outcome compared between the arms.
type Metric struct {
	Name string `json:"name"`
	// Better is +1 when higher is better, -1 when lower is, 0 when
	// neither (reported, never flagged).
	Better int  `json:"better"`
	Guard  bool `json:"guard"`
	// NControl and NTreatment count the conversations the metric is
	// defined for.
	NControl   int     `json:"n_control"`
	NTreatment int     `json:"n_treatment"`
	Control    float64 `json:"control"`   // mean (a rate for yes/no outcomes)
	Treatment  float64 `json:"treatment"` // mean
	Diff       float64 `json:"diff"`      // treatment - control
	// Low and High: the fixed-sample 95% interval; CS the always-valid
	// 1-alpha confidence sequence (nil until each arm has MinPerArm); P
	// the always-valid p-value.
	Low  float64     `json:"low"`
	High float64     `json:"high"`
	CS   *[2]float64 `json:"cs,omitempty"`
	P    float64     `json:"p_always_valid"`
	// Needed: more conversations of this population for MinEffect.
	Needed int `json:"needed"`
	// Flag says a guard metric moved the wrong way ("worse": its 95%
	// interval is on the wrong side of 0).
	Flag string `json:"flag,omitempty"`
}

// Report is the analysis of one tenant's experiment.
type Report struct {
	Tenant     string              `json:"tenant"`
	Experiment string              `json:"experiment"`
	Alpha      float64             `json:"alpha"`
	MinEffect  float64             `json:"min_effect"`
	Holdout    float64             `json:"holdout"`
	Arms       map[string]ArmCount `json:"arms"`
	// Activated is the primary view (the effect of planting where rein
	// would act, intent to treat); All every conversation.
	Activated []Metric `json:"activated"`
	All       []Metric `json:"all"`
}

// outcome is one metric's definition.
type outcome struct {
	name   string
	better int
	guard  bool
	// value is the conversation's value; ok false leaves it out.
	value func(Conversation) (float64, bool)
}

func yes(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// escalationReasons are the reasons with a metric of their own (bounded).
var escalationReasons = []string{schemas.ReasonTransfer, schemas.ReasonAgentUnavailable, schemas.ReasonMaxSteps}

// outcomes lists the metrics; labels are the custom labels seen.
func outcomes(labels []string) []outcome {
	out := []outcome{
		{"escalated", -1, true, func(c Conversation) (float64, bool) { return yes(c.EscalationReason != ""), true }},
	}
	for _, r := range escalationReasons {
		out = append(out, outcome{"escalated_" + r, 0, false, func(c Conversation) (float64, bool) { return yes(c.EscalationReason == r), true }})
	}
	out = append(out,
		outcome{"unanswered_turns", -1, true, func(c Conversation) (float64, bool) { return float64(c.Unanswered), true }},
		outcome{"user_turns", -1, true, func(c Conversation) (float64, bool) { return float64(c.UserTurns), true }},
		outcome{"recovery_tool", +1, false, func(c Conversation) (float64, bool) { return yes(c.RecoveryTool), true }},
		outcome{"state_changes_after_activation", 0, false, func(c Conversation) (float64, bool) { return float64(c.StateChanges), c.Activated }},
		outcome{schemas.FeedbackResolved, +1, false, func(c Conversation) (float64, bool) { return yes(c.Feedback[schemas.FeedbackResolved]), true }},
		outcome{schemas.FeedbackAbandoned, -1, true, func(c Conversation) (float64, bool) { return yes(c.Feedback[schemas.FeedbackAbandoned]), true }},
		outcome{schemas.FeedbackReopened, -1, true, func(c Conversation) (float64, bool) { return yes(c.Feedback[schemas.FeedbackReopened]), true }},
		outcome{schemas.FeedbackSatisfaction, +1, false, func(c Conversation) (float64, bool) { return float64(c.Satisfaction), c.Satisfaction > 0 }},
	)
	for _, l := range labels {
		key := "label-" + l
		out = append(out, outcome{key, 0, false, func(c Conversation) (float64, bool) { return yes(c.Feedback[key]), true }})
	}
	return out
}

// Analyze compares the arms of convs (one experiment's conversations).
func Analyze(tenant, name string, convs []Conversation, o Options) Report {
	convs = slices.Clone(convs)
	sort.SliceStable(convs, func(i, j int) bool { return convs[i].Start.Before(convs[j].Start) })
	arms := map[string]ArmCount{schemas.ArmTreatment: {}, schemas.ArmControl: {}}
	labels := map[string]bool{}
	for _, c := range convs {
		a := arms[c.Arm]
		a.Conversations++
		if c.Activated {
			a.Activated++
		}
		arms[c.Arm] = a
		for k := range c.Feedback {
			if l, ok := strings.CutPrefix(k, "label-"); ok {
				labels[l] = true
			}
		}
	}
	observed := 0.0
	if n := len(convs); n > 0 {
		observed = float64(arms[schemas.ArmControl].Conversations) / float64(n)
	}
	o.defaults(observed)
	names := make([]string, 0, len(labels))
	for l := range labels {
		names = append(names, l)
	}
	slices.Sort(names)
	defs := outcomes(names)
	r := Report{Tenant: tenant, Experiment: name, Alpha: o.Alpha, MinEffect: o.MinEffect, Holdout: o.Holdout, Arms: arms}
	activated := func(c Conversation) bool { return c.Activated }
	all := func(Conversation) bool { return true }
	for _, d := range defs {
		r.Activated = append(r.Activated, compare(d, convs, activated, o))
		r.All = append(r.All, compare(d, convs, all, o))
	}
	return r
}

// compare runs one metric's test over the conversations in keep, in
// their order.
func compare(d outcome, convs []Conversation, keep func(Conversation) bool, o Options) Metric {
	s := NewSeq(o.Alpha, o.MinEffect)
	for _, c := range convs {
		if c.Arm != schemas.ArmControl && c.Arm != schemas.ArmTreatment || !keep(c) {
			continue
		}
		if v, ok := d.value(c); ok {
			s.Add(c.Arm == schemas.ArmControl, v)
		}
	}
	m := Metric{Name: d.name, Better: d.better, Guard: d.guard, NControl: s.c.n, NTreatment: s.t.n,
		Control: s.c.mean(), Treatment: s.t.mean(), P: s.P(), Needed: s.Needed(o.MinEffect, o.Holdout)}
	m.Diff, m.Low, m.High = s.Fixed()
	if s.started {
		lo, hi := s.CS()
		m.CS = &[2]float64{lo, hi}
	}
	if d.guard && s.c.n >= MinPerArm && s.t.n >= MinPerArm {
		if (d.better < 0 && m.Low > 0) || (d.better > 0 && m.High < 0) {
			m.Flag = "worse"
		}
	}
	return m
}

// Find returns the named metric of a view, if there.
func Find(ms []Metric, name string) (Metric, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// WriteText writes the report for a terminal.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "experiment %s of tenant %s  (holdout %.0f%% in control; alpha %.2f; minimal effect %.3f)\n",
		r.Experiment, r.Tenant, 100*r.Holdout, r.Alpha, r.MinEffect)
	for _, a := range []string{schemas.ArmTreatment, schemas.ArmControl} {
		fmt.Fprintf(&b, "  %-9s %6d conversations, %6d activated\n", a, r.Arms[a].Conversations, r.Arms[a].Activated)
	}
	view := func(title string, ms []Metric) {
		fmt.Fprintf(&b, "\n%s\n", title)
		fmt.Fprintf(&b, "  %-34s %8s %8s %9s %21s %21s %8s %8s\n", "outcome", "control", "treated", "diff", "95% interval", "always-valid CS", "p (AV)", "needed")
		for _, m := range ms {
			if m.NControl+m.NTreatment == 0 {
				continue
			}
			flag := ""
			if m.Flag != "" {
				flag = "  ! guard moved the wrong way"
			}
			fmt.Fprintf(&b, "  %-34s %8.3f %8.3f %+9.3f %21s %21s %8.4f %8d%s\n", m.Name, m.Control, m.Treatment, m.Diff,
				interval(m.Low, m.High, m.NControl >= MinPerArm && m.NTreatment >= MinPerArm), cs(m.CS), m.P, m.Needed, flag)
		}
	}
	view("conversations where rein would act (activated; the primary view)", r.Activated)
	view("all conversations", r.All)
	_, err := io.WriteString(w, b.String())
	return err
}

func interval(lo, hi float64, enough bool) string {
	if !enough {
		return "(too few)"
	}
	return fmt.Sprintf("[%+.3f, %+.3f]", lo, hi)
}

func cs(c *[2]float64) string {
	if c == nil {
		return "(too few)"
	}
	return interval(c[0], c[1], true)
}

package audit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reinception/rein/schemas"
)

// Kinds of timeline and transcript lines.
const (
	KindUser       = "USER"
	KindAgent      = "AGENT"
	KindDetection  = "DETECTION"
	KindTask       = "TASK"
	KindStep       = "STEP"
	KindEscalation = "ESCALATION"
	KindReport     = "REPORT"
	KindDeadLetter = "DEAD LETTER"
	KindTimeout    = "HANDOFF TIMEOUT"
	KindUnanswered = "UNANSWERED"
	KindRelease    = "RELEASE"
	KindLabel      = "LABEL"
	KindFeedback   = "FEEDBACK"
	KindOther      = "EVENT"
)

// Summarize renders one event's data as a kind and a one-paragraph
// human-readable text. It never fails: data that does not decode is shown
// raw.
func Summarize(typ string, data []byte) (kind, text string) {
	switch typ {
	case schemas.TypeTurn:
		var t schemas.Turn
		if json.Unmarshal(data, &t) != nil {
			return KindOther, string(data)
		}
		if t.Role == schemas.RoleAgent {
			return KindAgent, t.Text
		}
		return KindUser, t.Text
	case schemas.TypeDetection:
		var d schemas.Detection
		if json.Unmarshal(data, &d) != nil {
			return KindDetection, string(data)
		}
		return KindDetection, detectionText(d)
	case schemas.TypeTask:
		var t schemas.Task
		if json.Unmarshal(data, &t) != nil {
			return KindTask, string(data)
		}
		if t.Inception == nil {
			return KindTask, "work item, nothing planted"
		}
		return KindTask, fmt.Sprintf("planted think (%s, then %s): %s", t.Inception.ErrorType, t.Inception.RecoveryTool, t.Inception.Thought)
	case schemas.TypeStep:
		var s schemas.Step
		if json.Unmarshal(data, &s) != nil {
			return KindStep, string(data)
		}
		return KindStep, stepText(s)
	case schemas.TypeSteps:
		var b schemas.Steps
		if json.Unmarshal(data, &b) != nil {
			return KindStep, string(data)
		}
		lines := make([]string, len(b.Steps))
		for i, s := range b.Steps {
			lines[i] = stepText(s)
		}
		return KindStep, strings.Join(lines, "\n")
	case schemas.TypeEscalation:
		var e schemas.Escalation
		if json.Unmarshal(data, &e) != nil {
			return KindEscalation, string(data)
		}
		txt := e.Reason
		if e.ErrorType != "" {
			txt += " (" + e.ErrorType + ")"
		}
		return KindEscalation, txt + ": " + e.Summary
	case schemas.TypeFeedback:
		var f schemas.Feedback
		if json.Unmarshal(data, &f) != nil {
			return KindFeedback, string(data)
		}
		txt := f.Kind
		switch f.Kind {
		case schemas.FeedbackSatisfaction:
			txt += fmt.Sprintf(" %d/5", f.Score)
		case schemas.FeedbackLabel:
			txt += " " + f.Label
		}
		if f.Note != "" {
			txt += ": " + f.Note
		}
		return KindFeedback, txt
	case schemas.TypeReport:
		var r schemas.Report
		if json.Unmarshal(data, &r) != nil {
			return KindReport, string(data)
		}
		if r.ErrorType != "" {
			return KindReport, r.ErrorType + ": " + r.Report
		}
		return KindReport, r.Report
	case schemas.TypeDeadLetter:
		var d schemas.DeadLetter
		if json.Unmarshal(data, &d) != nil {
			return KindDeadLetter, string(data)
		}
		txt := d.Stage + ": " + d.Reason + " (" + d.Subject
		if d.Stream != "" {
			txt += fmt.Sprintf(", %s #%d", d.Stream, d.Sequence)
		}
		return KindDeadLetter, txt + ")"
	case schemas.TypeUnanswered:
		var u schemas.Unanswered
		if json.Unmarshal(data, &u) != nil {
			return KindUnanswered, string(data)
		}
		return KindUnanswered, unansweredText(u)
	case schemas.TypeRelease:
		var r schemas.Release
		if json.Unmarshal(data, &r) != nil {
			return KindRelease, string(data)
		}
		txt := fmt.Sprintf("given back to the agent (%s", r.Reason)
		if r.By != "" {
			txt += " by " + r.By
		}
		return KindRelease, txt + fmt.Sprintf("): the handoff of turn %d (%s) ends", r.Turn, r.HandoffReason)
	case schemas.TypeLabel:
		var l schemas.Label
		if json.Unmarshal(data, &l) != nil {
			return KindLabel, string(data)
		}
		return KindLabel, labelText(l)
	case schemas.TypeHandoffTimeout:
		var h schemas.HandoffTimeout
		if json.Unmarshal(data, &h) != nil {
			return KindTimeout, string(data)
		}
		return KindTimeout, fmt.Sprintf("escalation %s unclaimed by %s", h.EscalationID, h.Deadline)
	}
	return KindOther, typ + " " + string(data)
}

func labelText(l schemas.Label) string {
	txt := l.Verdict
	if l.ErrorType != "" {
		txt += " (" + l.ErrorType + ")"
	}
	txt += " by " + l.Labeller + " of "
	if l.Detected {
		txt += l.DetectedType
	} else {
		txt += "clear"
	}
	if l.Sample != nil {
		txt += fmt.Sprintf("; review queue %s, %s, π %.3g", l.Sample.Day, l.Sample.Stratum, l.Sample.Probability)
	}
	if l.Note != "" {
		txt += ": " + l.Note
	}
	return txt
}

func unansweredText(u schemas.Unanswered) string {
	switch u.Reason {
	case schemas.UnansweredSuperseded:
		return fmt.Sprintf("superseded by turn %d", u.SupersededBy)
	case schemas.UnansweredHumanPath:
		return fmt.Sprintf("human_path: the conversation belongs to a human since turn %d (%s)", u.EscalatedTurn, u.HandoffReason)
	}
	return u.Reason + ": " + u.Detail
}

func detectionText(d schemas.Detection) string {
	var b strings.Builder
	switch {
	case d.Failed:
		b.WriteString("failed open: " + d.FailReason)
	case d.Rein:
		fmt.Fprintf(&b, "%s (%s) → %s", d.ErrorType, d.Category, d.RecoveryTool)
		if d.Evidence != "" {
			fmt.Fprintf(&b, "; evidence %q", d.Evidence)
		}
	default:
		b.WriteString("clear")
	}
	b.WriteString(" [" + d.Module)
	if d.Model != "" {
		b.WriteString(" " + d.Model)
	}
	if d.ModelVersion != "" {
		b.WriteString(" " + d.ModelVersion)
	}
	if d.TaxonomyVersion != "" {
		b.WriteString(", taxonomy " + d.TaxonomyVersion)
	}
	b.WriteString("]")
	if d.Arm != "" {
		// Control is judged like treatment; its task plants nothing.
		fmt.Fprintf(&b, " experiment %s, arm %s", d.Experiment, d.Arm)
		if d.Arm == schemas.ArmControl && d.Rein {
			b.WriteString(" (would have planted)")
		}
	}
	return b.String()
}

// batchSteps is the steps a dev.rein.steps.v1 holds, each with the JSON
// its own dev.rein.step.v1 would carry, so that a view shows a batch as
// the single steps it stands for; ok is false for other data.
func batchSteps(data []byte) (steps []schemas.Step, raw [][]byte, ok bool) {
	var b schemas.Steps
	if json.Unmarshal(data, &b) != nil || len(b.Steps) == 0 {
		return nil, nil, false
	}
	raw = make([][]byte, len(b.Steps))
	for i := range b.Steps {
		var err error
		if raw[i], err = json.Marshal(b.Steps[i]); err != nil {
			return nil, nil, false
		}
	}
	return b.Steps, raw, true
}

func stepText(s schemas.Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", s.Step, s.Kind)
	if s.Name != "" && s.Name != s.Kind {
		b.WriteString(" " + s.Name)
	}
	if len(s.Arguments) > 0 {
		b.WriteString(" " + string(s.Arguments))
	}
	if s.Output != "" {
		b.WriteString(" → " + clip(s.Output, maxOutputRunes))
	}
	if s.Injected {
		b.WriteString(" [planted by rein]")
	}
	return b.String()
}

// maxOutputRunes bounds a tool result in text renderings (JSON keeps it whole).
const maxOutputRunes = 300

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

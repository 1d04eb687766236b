package audit

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// An experiment's conversations are read back from the streams: the arm
// of the first detection, activation in both arms, escalation, unanswered
// turns, recovery-tool use, state-changing calls after the activation,
// and the platform's feedback; other experiments and tenants stay out.
func TestExperimentConversationsFromTheStreams(t *testing.T) {
	h := testutil.StartJetStream(t, "")
	const tn = "acme"
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	m := func(tenant, conv string, turn int) schemas.Meta {
		return schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}
	}
	det := func(tenant, conv string, turn, s int, d schemas.Detection) streams.Out {
		d.Turn, d.UserText, d.Module, d.TaxonomyVersion = turn, "x", "rules", "1"
		if d.Rein {
			d.ErrorType, d.Category, d.Reasoning = "anaphora", "ambiguous", "ask which"
		}
		return ev(t, bus.StreamDetections, bus.DetectionSubject(tenant, conv), schemas.TypeDetection,
			schemas.EventID("detection", tenant, conv, turn), m(tenant, conv, turn), at(s), d)
	}
	ctl := schemas.Detection{Experiment: "e1", Arm: schemas.ArmControl}
	trt := schemas.Detection{Experiment: "e1", Arm: schemas.ArmTreatment}
	on := func(d schemas.Detection) schemas.Detection { d.Rein = true; return d }
	step := func(conv string, turn, n int, name string) streams.Out {
		return ev(t, bus.StreamSteps, bus.StepSubject(tn, conv), schemas.TypeStep, schemas.StepEventID(tn, conv, turn, n), m(tn, conv, turn), at(30),
			schemas.Step{Turn: turn, Step: n, Kind: schemas.StepToolCall, Name: name, Arguments: json.RawMessage(`{}`)})
	}
	fb := func(conv string, f schemas.Feedback) streams.Out {
		return ev(t, bus.StreamFeedback, bus.FeedbackSubject(tn, conv, f.Key()), schemas.TypeFeedback, streams.FeedbackID(tn, conv, f.Key()), m(tn, conv, 0), at(40), f)
	}
	publish(t, h,
		det(tn, "c1", 1, 1, ctl), det(tn, "c1", 2, 5, on(ctl)), det(tn, "c1", 3, 9, schemas.Detection{}), // killed at turn 3: still control
		det(tn, "t1", 1, 2, on(trt)), det(tn, "t1", 2, 6, trt),
		det(tn, "old", 1, 0, schemas.Detection{Experiment: "e0", Arm: schemas.ArmControl}),
		det(tn, "none", 1, 3, schemas.Detection{}),
		det("globex", "g1", 1, 3, ctl),
		ev(t, bus.StreamOutcomes, bus.EscalationSubject(tn, "c1"), schemas.TypeEscalation, schemas.EventID("escalation", tn, "c1", 3), m(tn, "c1", 3), at(10),
			schemas.Escalation{Turn: 3, Summary: "s", Reason: schemas.ReasonMaxSteps}),
		ev(t, bus.StreamOutcomes, bus.UnansweredSubject(tn, "c1"), schemas.TypeUnanswered, schemas.EventID("unanswered", tn, "c1", 2), m(tn, "c1", 2), at(7),
			schemas.Unanswered{Turn: 2, Reason: schemas.UnansweredFailed}),
		ev(t, bus.StreamOutcomes, bus.ReportSubject(tn, "t1"), schemas.TypeReport, schemas.EventID("report", tn, "t1", 1), m(tn, "t1", 1), at(3),
			schemas.Report{Turn: 1, Report: "which one"}),
		step("t1", 1, 0, "ambiguity_report"), step("t1", 1, 1, "get_user_details"), step("t1", 2, 0, "cancel_reservation"),
		step("c1", 1, 0, "cancel_reservation"), // before c1's activation at turn 2
		fb("t1", schemas.Feedback{Kind: schemas.FeedbackResolved}), fb("t1", schemas.Feedback{Kind: schemas.FeedbackSatisfaction, Score: 5}),
		fb("c1", schemas.Feedback{Kind: schemas.FeedbackLabel, Label: "refund"}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name, convs, err := ExperimentConversations(ctx, h.JS, tn, "")
	if err != nil || name != "e1" {
		t.Fatalf("%q, %v", name, err)
	}
	slices.SortFunc(convs, func(a, b experiment.Conversation) int { return strings.Compare(a.ID, b.ID) })
	if len(convs) != 2 || convs[0].ID != "c1" || convs[1].ID != "t1" {
		t.Fatalf("conversations %+v", convs)
	}
	c, tr := convs[0], convs[1]
	if c.Arm != schemas.ArmControl || !c.Activated || c.UserTurns != 3 || c.Unanswered != 1 || c.EscalationReason != schemas.ReasonMaxSteps ||
		c.RecoveryTool || c.StateChanges != 0 || !c.Feedback["label-refund"] {
		t.Errorf("control conversation %+v", c)
	}
	if tr.Arm != schemas.ArmTreatment || !tr.Activated || tr.UserTurns != 2 || !tr.RecoveryTool || tr.StateChanges != 1 ||
		!tr.Feedback[schemas.FeedbackResolved] || tr.Satisfaction != 5 {
		t.Errorf("treatment conversation %+v", tr)
	}
	if _, convs, err := ExperimentConversations(ctx, h.JS, tn, "e0"); err != nil || len(convs) != 1 || convs[0].ID != "old" {
		t.Errorf("experiment e0: %+v, %v", convs, err)
	}
	if _, _, err := ExperimentConversations(ctx, h.JS, "nobody", ""); err == nil {
		t.Error("a tenant with no experiment: no error")
	}
}

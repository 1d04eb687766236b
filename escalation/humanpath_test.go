package escalation_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/escalation"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// The later turns of a conversation handed to a human reach the sinks and
// the handoff desk: a human_path record is written to the audit file and
// queued as a handoff item (reason human_path, naming the handoff it
// follows); a superseded record is not a desk's work; a release is in the
// audit file too. Before, the stage took no releases and the desk got no
// item for a human_path turn.
func TestHumanPathTurnsAndReleasesReachTheSinksAndTheDesk(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	st, err := escalation.New(escalation.Config{Sinks: escalation.SinksConfig{Sinks: []escalation.SinkConfig{
		{JSONL: &escalation.JSONLConfig{Path: audit, SyncInterval: time.Millisecond}},
		{Handoff: &escalation.HandoffConfig{Deadline: time.Hour}},
	}}}, escalation.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Registerer: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	stop := rtest.Run(t, "escalation", st.Run)

	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	out := func(typ, subject, id string, turn int, data any) streams.Out {
		ev, err := schemas.NewEvent(typ, id, "", schemas.Meta{Tenant: "acme", Conversation: "hp", Turn: turn}, data)
		if err != nil {
			t.Fatal(err)
		}
		return streams.Out{Stream: bus.StreamOutcomes, Subject: subject, Event: &ev}
	}
	human := out(schemas.TypeUnanswered, bus.UnansweredSubject("acme", "hp"), schemas.EventID("unanswered", "acme", "hp", 3), 3,
		schemas.Unanswered{Turn: 3, Reason: schemas.UnansweredHumanPath, EscalatedTurn: 2, HandoffReason: schemas.ReasonAgentUnavailable})
	superseded := out(schemas.TypeUnanswered, bus.UnansweredSubject("acme", "hp"), schemas.EventID("unanswered", "acme", "hp", 1), 1,
		schemas.Unanswered{Turn: 1, Reason: schemas.UnansweredSuperseded, SupersededBy: 3})
	release := out(schemas.TypeRelease, bus.ReleaseSubject("acme", "hp"), schemas.EventID("release", "acme", "hp", 2), 2,
		schemas.Release{Turn: 2, Reason: schemas.ReleaseOperator, HandoffReason: schemas.ReasonAgentUnavailable, By: "alice"})
	if _, err := pub.PublishAll(ctx, superseded, human, release); err != nil {
		t.Fatal(err)
	}

	// The claim may come while the stage is still creating the desk's
	// consumer: it asks again within its wait (it failed with "no
	// responders" before).
	item, err := escalation.Claim(ctx, h.JS, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if item.ID != human.Event.ID() || item.Turn != 3 || item.Reason != schemas.UnansweredHumanPath ||
		!strings.Contains(item.Summary, "turn 2 (agent_unavailable)") {
		t.Errorf("handoff item %+v, want the human_path record of turn 3", *item)
	}
	m := escalation.NewMetrics(reg) // the stage's collectors (registered once)
	rtest.CheckFor(t, 10*time.Second, "all three delivered", func() bool {
		evs, err := escalation.ReadAuditFiles(audit)
		return err == nil && len(evs) == 3 &&
			promtestutil.ToFloat64(m.Unanswered.WithLabelValues(schemas.UnansweredHumanPath)) == 1 &&
			promtestutil.ToFloat64(m.Unanswered.WithLabelValues(schemas.UnansweredSuperseded)) == 1
	})
	stop()
	evs, _ := escalation.ReadAuditFiles(audit)
	types := map[string]int{}
	for _, e := range evs {
		types[e.Type()]++
	}
	if types[schemas.TypeRelease] != 1 || types[schemas.TypeUnanswered] != 2 {
		t.Errorf("audit file holds %v", types)
	}
	if _, err := escalation.Claim(ctx, h.JS, 0); err == nil {
		t.Error("a second handoff item: the superseded record was queued for the desk")
	}
}

package escalation

import (
	"context"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

// startJetStream runs an in-process JetStream server with rein's streams
// provisioned (REIN_HANDOFF included, as streams.Provision declares it).
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	return testutil.StartJetStream(t, "").JS
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.CheckFor(t, d, what, cond)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newTestMetrics(t *testing.T) (*Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	return m, reg
}

func escalationEvent(t *testing.T, tenant, conv string, turn int) cloudevents.Event {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", tenant, conv, turn), "",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn},
		schemas.Escalation{
			Turn: turn, Summary: "user wants a window seat; seat selection is not offered",
			ErrorType: "unsupported_action", Reason: schemas.ReasonTransfer,
			DetectionID: schemas.EventID("detection", tenant, conv, turn),
			Thought:     "Seat selection is not a supported action; transfer to a human with a summary.",
		})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func reportEvent(t *testing.T, tenant, conv string, turn int) cloudevents.Event {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeReport, schemas.EventID("report", tenant, conv, turn), "",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn},
		schemas.Report{Turn: turn, Report: "'that one' could mean either reservation", ErrorType: "anaphora"})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

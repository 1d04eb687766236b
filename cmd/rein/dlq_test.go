package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinception/rein/escalation"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// A webhook refuses an escalation (dead-lettered); once it is fixed,
// `rein dlq redrive` is a dry run by default, then puts the escalation
// back exactly once: the receiver gets it once, a second redrive skips it.
func TestDLQRedrivePutsADeadLetterBackOnce(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var fixed atomic.Bool
	var received atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !fixed.Load() {
			w.WriteHeader(http.StatusBadRequest) // permanent: dead-lettered
			return
		}
		received.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	t.Setenv("REIN_TEST_DLQ_SECRET", "0123456789abcdef0123456789abcdef")
	st, err := escalation.New(escalation.Config{Sinks: escalation.SinksConfig{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{URL: recv.URL, SecretEnv: "REIN_TEST_DLQ_SECRET", Attempts: 1}},
	}}}, escalation.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "escalation", st.Run)

	meta := schemas.Meta{Tenant: "acme", Conversation: "d1", Turn: 3}
	ev, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "d1", 3), "", meta,
		schemas.Escalation{Turn: 3, Summary: "wants a hotel", Reason: schemas.ReasonTransfer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamOutcomes, bus.EscalationSubject("acme", "d1"), &ev); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 20*time.Second, "the escalation dead-lettered", func() bool {
		out, err := runCLI(t, context.Background(), "dlq", "list", "--nats-url", h.URL(), "--data-dir", h.Dir, "--stage", "escalation")
		return err == nil && strings.Contains(out, "acme/d1")
	})
	fixed.Store(true)

	out, err := runCLI(t, context.Background(), "dlq", "redrive", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme")
	if err != nil || !strings.Contains(out, "would put back") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if n := received.Load(); n != 0 {
		t.Fatalf("a dry run delivered %d events", n)
	}
	out, err = runCLI(t, context.Background(), "dlq", "redrive", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme", "--yes")
	if err != nil || !strings.Contains(out, "put back #") {
		t.Fatalf("redrive: %v\n%s", err, out)
	}
	rtest.CheckFor(t, 20*time.Second, "the receiver got the redriven escalation", func() bool { return received.Load() == 1 })
	out, err = runCLI(t, context.Background(), "dlq", "redrive", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme", "--yes")
	if err != nil || !strings.Contains(out, "already redriven") {
		t.Fatalf("second redrive: %v\n%s", err, out)
	}
	out, err = runCLI(t, context.Background(), "dlq", "list", "--nats-url", h.URL(), "--data-dir", h.Dir)
	if err != nil || !strings.Contains(out, "[redriven #") {
		t.Fatalf("list after redrive: %v\n%s", err, out)
	}
	// Give a wrongly repeated delivery the time to show (the stage is
	// asynchronous): wait until the stage has acked everything.
	h.WaitAcked(t, 10*time.Second, bus.StreamOutcomes, bus.DurableEscalation, 2)
	if n := received.Load(); n != 1 {
		t.Fatalf("the receiver got the escalation %d times, want once", n)
	}
}

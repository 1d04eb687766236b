package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/app/dashboard"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// rein streams reports the deployment's traffic from the streams: turns
// stored by two separate publishers (two processes, each with its own
// connection) are all counted in every window, and the detector's
// consumer shows how long its oldest pending turn has waited.
func TestStreamsReportsEveryPublishersTraffic(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, identity := range []string{natsserver.IdentityAdmin, natsserver.IdentityIngress} {
		_, js := h.ConnectTCP(t, identity)
		pub := streams.NewPublisher(js, prometheus.NewRegistry(), streams.PublisherConfig{})
		for turn := 1; turn <= 3; turn++ {
			conv := fmt.Sprintf("p%d", i)
			ev, err := schemas.NewEvent(schemas.TypeTurn, fmt.Sprintf("t-%s-%d", conv, turn), "", schemas.Meta{Tenant: "acme", Conversation: conv, Turn: turn},
				schemas.Turn{Role: schemas.RoleUser, Text: "hi", Turn: turn})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject("acme", conv, schemas.RoleUser), &ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := h.JS.CreateOrUpdateConsumer(ctx, bus.StreamTurns, jetstream.ConsumerConfig{
		Durable: bus.DurableDetector, FilterSubject: bus.UserTurnsAll, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}

	rows, failed := streamReports(ctx, h.JS, 10*time.Second)
	if failed != 0 {
		t.Fatalf("%d streams failed: %+v", failed, rows)
	}
	var turns *streamReport
	for i := range rows {
		if rows[i].Name == bus.StreamTurns {
			turns = &rows[i]
		}
	}
	if turns == nil || turns.RatesError != "" || len(turns.Rates) != 3 {
		t.Fatalf("REIN_TURNS row %+v", turns)
	}
	for _, r := range turns.Rates {
		if r.Messages != 6 {
			t.Errorf("window %s: %d turns, want the 6 of both publishers", r.Window, r.Messages)
		}
	}
	if turns.Rates[0].PerSecond != 0.1 || turns.Trend != dashboard.DirectionRising {
		t.Errorf("1m rate %v, trend %s: want 0.1/s, rising", turns.Rates[0].PerSecond, turns.Trend)
	}
	if len(turns.Consumers) != 1 || turns.Consumers[0].Pending != 6 || turns.Consumers[0].OldestPendingS <= 0 {
		t.Errorf("consumers %+v", turns.Consumers)
	}
	var out bytes.Buffer
	if err := printStreams(&out, rows, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "STORED 1M/15M/1H") || !strings.Contains(out.String(), "6 / 6 / 6") || !strings.Contains(out.String(), "rising") {
		t.Errorf("table:\n%s", out.String())
	}
}

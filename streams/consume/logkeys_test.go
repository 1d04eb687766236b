package consume_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
)

// The consume loop's log lines hold each key once when the stage's logger
// already names the stage (serve's does); "stage" appeared twice before.
func TestConsumeLogsHoldEachKeyOnce(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	bustest.PublishTurns(t, h, []streams.Out{*bustest.TurnEvent(t, "acme", "logs", 1, "x")})
	var buf bustest.SyncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("stage", "test")
	cfg := consume.ConsumerConfig{Stage: "test", Stream: bus.StreamTurns, Durable: "logs", Filter: []string{bus.UserTurnsAll}, Backoff: time.Millisecond, Attempts: 2}
	c, err := consume.NewConsumer(cfg, consume.ConsumerDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: log, Registerer: prometheus.NewRegistry()},
		func(context.Context, streams.Decoded) error { return errors.New("always fails") })
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "consumer", c.Run)
	rtest.CheckFor(t, 20*time.Second, "the turn dead-lettered", func() bool { return strings.Contains(buf.String(), "dead-lettered") })
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		dec := json.NewDecoder(strings.NewReader(line))
		seen := map[string]bool{}
		if _, err := dec.Token(); err != nil { // {
			t.Fatal(err)
		}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			if seen[k.(string)] {
				t.Fatalf("key %q twice in %s", k, line)
			}
			seen[k.(string)] = true
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/labels"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// An operator lists a tenant's review queue, labels a queued turn (once:
// the same label again changes nothing), sees the label in rein audit, and
// rein detect --eval --labels measures from it; another tenant's labels
// never show in the first tenant's queue, audit or figures.
func TestLabelCommands(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	store := func(tenant, conv string, errType string) {
		d := schemas.Detection{Turn: 1, UserText: "text of " + conv, Module: "rules", TaxonomyVersion: "1"}
		if errType != "" {
			d.Rein, d.ErrorType, d.Reasoning = true, errType, "r"
		}
		ev, err := schemas.NewEvent(schemas.TypeDetection, schemas.EventID("detection", tenant, conv, 1), "", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: 1}, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(ctx, bus.StreamDetections, bus.DetectionSubject(tenant, conv), &ev); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		store("acme", fmt.Sprintf("a%d", i), "anaphora")
		store("acme", fmt.Sprintf("c%d", i), "")
	}
	store("globex", "a0", "anaphora")
	// The detections are today's; the queue is drawn once the day is over.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	labelNow = func() time.Time { return today.Add(26 * time.Hour) }
	defer func() { labelNow = time.Now }()
	conn := []string{"--nats-url", h.URL(), "--data-dir", h.Dir}
	run := func(args ...string) (string, error) { return runCLI(t, ctx, append(args, conn...)...) }

	out, err := run("label", "queue", "--tenant", "acme", "--label-budget", "12", "--json")
	if err != nil {
		t.Fatalf("queue: %v", err)
	}
	var rows []queueRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 12 {
		t.Fatalf("queue of 12 turns at budget 12: %d rows, %v\n%s", len(rows), err, out)
	}
	for _, r := range rows {
		if r.Probability != 1 || r.Labelled {
			t.Errorf("row %+v", r)
		}
	}
	args := []string{"label", "--tenant", "acme", "--conversation", "a0", "--turn", "1", "--verdict", "wrong_type", "--type", "contradiction", "--labeller", "ann", "--label-budget", "12"}
	out, err = run(args...)
	if err != nil || !strings.Contains(out, "labelled acme/a0 turn 1: wrong_type contradiction by ann (rein said anaphora; review queue") {
		t.Fatalf("label: %q, %v", out, err)
	}
	if out, err = run(args...); err != nil || !strings.HasPrefix(out, "unchanged") {
		t.Fatalf("the same label again: %q, %v", out, err)
	}
	if _, err := run("label", "--tenant", "globex", "--conversation", "a0", "--turn", "1", "--verdict", "correct", "--labeller", "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := run("label", "--tenant", "acme", "--conversation", "c0", "--turn", "1", "--verdict", "false_activation"); err == nil ||
		!strings.Contains(err.Error(), "did not activate") {
		t.Errorf("a false activation of a clear turn: %v", err)
	}
	out, err = run("label", "queue", "--tenant", "acme", "--label-budget", "12")
	if err != nil || !strings.Contains(out, "12 turns drawn, 11 listed") || strings.Contains(out, "a0 ") {
		t.Errorf("queue after a label: %v\n%s", err, out)
	}
	out, err = run("audit", "--tenant", "acme", "--conversation", "a0")
	if err != nil || !strings.Contains(out, "LABEL") || !strings.Contains(out, "wrong_type (contradiction) by ann") || strings.Contains(out, "bob") {
		t.Errorf("audit: %v\n%s", err, out)
	}
	measure := func(extra ...string) labels.Report {
		t.Helper()
		out, err := run(append([]string{"detect", "--eval", "--labels", "--json"}, extra...)...)
		if err != nil {
			t.Fatalf("detect --eval --labels %v: %v", extra, err)
		}
		var r labels.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r
	}
	acme := measure("--tenant", "acme")
	if p, _ := acme.Row(labels.RowOverall); acme.Turns != 1 || p.Precision.Value != 0 || p.Precision.Labels != 1 {
		t.Errorf("acme: %+v", acme)
	}
	if all := measure(); all.Turns != 2 {
		t.Errorf("every tenant: %d turns, want 2", all.Turns)
	}
	out, err = run("detect", "--eval", "--labels", "--tenant", "acme")
	if err != nil || !strings.Contains(out, "anaphora") || !strings.Contains(out, "95% CI") {
		t.Errorf("table: %v\n%s", err, out)
	}
}

package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// `rein handoff release` gives a conversation handed to a human back to
// the agent: it stores one dev.rein.release.v1 for the conversation's last
// escalation, names who released it, and refuses a second release of the
// same handoff and a conversation never handed over.
func TestHandoffReleaseCommand(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	meta := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 2}
	esc, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "c1", 2), "", meta,
		schemas.Escalation{Turn: 2, Summary: "the model failed", Reason: schemas.ReasonAgentUnavailable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(ctx, bus.StreamOutcomes, bus.EscalationSubject("acme", "c1"), &esc); err != nil {
		t.Fatal(err)
	}
	release := func(conv string) (string, error) {
		return runCLI(t, ctx, "handoff", "release", "--nats-url", h.URL(), "--data-dir", h.Dir, "--tenant", "acme", "--conversation", conv, "--by", "bob")
	}
	out, err := release("c1")
	if err != nil || !strings.Contains(out, "released acme/c1 (handed over at turn 2, agent_unavailable)") {
		t.Fatalf("release: %q, %v", out, err)
	}
	var rels []schemas.Release
	err = streams.ReadStream(ctx, h.JS, bus.StreamOutcomes, streams.ReadOptions{Filters: []string{bus.ReleaseSubject("acme", "c1")}}, func(r streams.Raw) error {
		var rel schemas.Release
		if r.Decoded == nil || json.Unmarshal(r.Decoded.Event.Data(), &rel) != nil || r.Decoded.Event.ID() != schemas.EventID("release", "acme", "c1", 2) {
			t.Errorf("release record %s #%d", r.Subject, r.Sequence)
		}
		rels = append(rels, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 || rels[0] != (schemas.Release{Turn: 2, Reason: schemas.ReleaseOperator, HandoffReason: schemas.ReasonAgentUnavailable, By: "bob"}) {
		t.Errorf("releases %+v", rels)
	}
	if _, err := release("c1"); err == nil || !strings.Contains(err.Error(), "already given back") {
		t.Errorf("second release: %v", err)
	}
	if _, err := release("c2"); err == nil || !strings.Contains(err.Error(), "not handed to a human") {
		t.Errorf("release of a conversation never handed over: %v", err)
	}
}

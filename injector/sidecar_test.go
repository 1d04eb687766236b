package injector_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/reinception/rein/injector"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

func TestSidecarRequestReply(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	startSidecar(t, h, injector.SidecarConfig{Wait: 300 * time.Millisecond})
	yes := schemas.Detection{Turn: 1, UserText: "cancel that one", Rein: true, ErrorType: "anaphora", RecoveryTool: "ambiguity_report", Reasoning: "ask which"}
	publishDetection(t, h, "s1", yes, "")
	publishDetection(t, h, "s1", schemas.Detection{Turn: 2, UserText: "thanks"}, "")
	publishDetection(t, h, "s2", schemas.Detection{Turn: 1, UserText: "hi", Failed: true, FailReason: "timeout"}, "")

	cases := []struct {
		name   string
		conv   string
		turn   int
		status string
		tool   string
	}{
		{"stored activation of an earlier turn", "s1", 1, injector.StatusReady, "ambiguity_report"},
		{"stored clear turn", "s1", 2, injector.StatusNone, ""},
		{"failed detection plants nothing", "s2", 1, injector.StatusNone, ""},
		{"no detection within the budget", "s1", 9, injector.StatusTimeout, ""},
		{"unknown conversation", "nobody", 1, injector.StatusTimeout, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := injector.Ask(context.Background(), h.Conn, tenant, tc.conv, tc.turn, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if a.Status != tc.status || a.Turn != tc.turn {
				t.Fatalf("answer = %+v, want status %s", a, tc.status)
			}
			if tc.tool == "" && a.Inception != nil {
				t.Errorf("unexpected inception %+v", a.Inception)
			}
			if tc.tool != "" && (a.Inception == nil || a.Inception.RecoveryTool != tc.tool || a.Inception.Thought != "ask which") {
				t.Errorf("inception = %+v", a.Inception)
			}
			if tc.status != injector.StatusTimeout && a.DetectionID != schemas.EventID("detection", tenant, tc.conv, tc.turn) {
				t.Errorf("detection id = %q", a.DetectionID)
			}
		})
	}

	t.Run("invalid subject", func(t *testing.T) {
		// Turn 0 would wait out the budget for a detection that never comes.
		for _, turn := range []string{"not-a-turn", "0"} {
			m, err := h.Conn.Request(bus.InceptionSubject(tenant, "c1", turn), nil, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(m.Data); !strings.Contains(got, `"status":"invalid"`) {
				t.Errorf("turn %q: answer = %s", turn, got)
			}
		}
		if _, err := injector.Ask(context.Background(), h.Conn, "bad tenant", "c", 1, time.Second); !errors.Is(err, injector.ErrBadRequest) {
			t.Errorf("Ask with a bad tenant: %v", err)
		}
	})
}

func TestSidecarWaitsForALateDetection(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// The responder's budget outlasts the request's own wait: an answer
	// given only at the budget's end would reach no one (Ask fails first).
	startSidecar(t, h, injector.SidecarConfig{Wait: time.Minute})
	type result struct {
		a   injector.Answer
		err error
	}
	got := make(chan result, 1)
	base := interest(t, h, "late")
	go func() {
		a, err := injector.Ask(context.Background(), h.Conn, tenant, "late", 1, 30*time.Second)
		got <- result{a, err}
	}()
	// The request is waiting once the responder watches the conversation's
	// detection subject.
	rtest.CheckFor(t, 5*time.Second, "request waiting", func() bool { return interest(t, h, "late") > base })
	publishDetection(t, h, "late", schemas.Detection{Turn: 1, UserText: "I want first class", Rein: true,
		ErrorType: "unsupported_parameter", Category: "unsupported", Reasoning: "transfer"}, "")
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.a.Status != injector.StatusReady || r.a.Inception == nil || r.a.Inception.RecoveryTool != schemas.ToolTransfer {
		t.Errorf("answer = %+v", r.a)
	}
}

// interest counts the server's subscriptions matching a conversation's
// detection subject (the stream's own, plus any responder watching it).
func interest(t *testing.T, h *rtest.JS, conv string) int {
	t.Helper()
	sz, err := h.Server.Subsz(&server.SubszOptions{Subscriptions: true, Test: bus.DetectionSubject(tenant, conv), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return sz.Total
}

package ingress_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
)

// TestFeedbackOverHTTP: POST /v1/feedback takes a dev.rein.feedback.v1
// for the token's tenant only, validates it (4xx naming the field), and
// stores one event per conversation and kind: the same again is a
// duplicate, another for the same kind a conflict.
func TestFeedbackOverHTTP(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	in := newIngress(t, ingress.Config{MaxBytes: 4096, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst,
		Tokens: tokens(t, telemetry.Token{Token: "acme-token-0123456789", Tenants: []string{"acme"}})}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}))
	srv := httptest.NewServer(in.Feedback())
	defer srv.Close()
	post := func(token, tenant, conv, data string) (int, map[string]any) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(data))
		r.Header.Set("ce-specversion", "1.0")
		r.Header.Set("ce-id", "f-"+conv)
		r.Header.Set("ce-source", "/platform")
		r.Header.Set("ce-type", schemas.TypeFeedback)
		r.Header.Set("ce-tenant", tenant)
		r.Header.Set("ce-conversation", conv)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body
	}
	cases := []struct {
		name, token, tenant, conv, data string
		code                            int
		field                           string
	}{
		{"resolved", "acme-token-0123456789", "acme", "c1", `{"kind":"resolved"}`, 202, ""},
		{"the same again", "acme-token-0123456789", "acme", "c1", `{"kind": "resolved"}`, 200, ""},
		{"satisfaction", "acme-token-0123456789", "acme", "c1", `{"kind":"satisfaction","score":4}`, 202, ""},
		{"another score", "acme-token-0123456789", "acme", "c1", `{"kind":"satisfaction","score":2}`, 409, "data"},
		{"a label", "acme-token-0123456789", "acme", "c1", `{"kind":"label","label":"refund_issued"}`, 202, ""},
		{"score out of range", "acme-token-0123456789", "acme", "c2", `{"kind":"satisfaction","score":6}`, 400, "data/score"},
		{"satisfaction without a score", "acme-token-0123456789", "acme", "c2", `{"kind":"satisfaction"}`, 400, "data"},
		{"unknown kind", "acme-token-0123456789", "acme", "c2", `{"kind":"happy"}`, 400, "data/kind"},
		{"score on resolved", "acme-token-0123456789", "acme", "c2", `{"kind":"resolved","score":3}`, 400, "data/score"},
		{"no token", "", "acme", "c2", `{"kind":"resolved"}`, 401, ""},
		{"another tenant", "acme-token-0123456789", "globex", "c2", `{"kind":"resolved"}`, 403, ""},
	}
	for _, c := range cases {
		code, body := post(c.token, c.tenant, c.conv, c.data)
		if code != c.code {
			t.Errorf("%s: status %d, want %d (%v)", c.name, code, c.code, body)
			continue
		}
		if f, _ := body["field"].(string); c.field != "" && !strings.HasPrefix(f, c.field) {
			t.Errorf("%s: field %q, want %q (%v)", c.name, f, c.field, body)
		}
		if c.code < 300 && body["stream"] != bus.StreamFeedback {
			t.Errorf("%s: answer %v", c.name, body)
		}
	}
	if n := h.StreamMsgs(t, bus.StreamFeedback); n != 3 {
		t.Errorf("REIN_FEEDBACK holds %d events, want resolved, satisfaction and the label", n)
	}
}

// TestFeedbackThroughTheIngest: a tenant sends feedback on
// rein.ingest.<tenant>.<conv>.feedback under its own identity (it may not
// write REIN_FEEDBACK, nor another tenant's ingest); rein stores it
// under the id it derives and answers like JetStream.
func TestFeedbackThroughTheIngest(t *testing.T) {
	h, conns := bustest.StartIngest(t, "acme")
	nc := conns["acme"]
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msg := func(subject, conv, data, msgID string) *nats.Msg {
		t.Helper()
		ev, err := schemas.NewEvent(schemas.TypeFeedback, "p-"+msgID, "/platform", schemas.Meta{Tenant: "acme", Conversation: conv}, schemas.Feedback{Kind: schemas.FeedbackResolved})
		if err != nil {
			t.Fatal(err)
		}
		// The platform's own bytes, valid or not.
		if err := ev.SetData(schemas.DataContentType, []byte(data)); err != nil {
			t.Fatal(err)
		}
		m, err := streams.Encode(subject, &ev)
		if err != nil {
			t.Fatal(err)
		}
		m.Header.Set(bus.HeaderMsgID, msgID)
		return m
	}
	subj := bus.IngestSubject("acme", "c1", bus.IngestFeedback)
	first, err := js.PublishMsg(ctx, msg(subj, "c1", `{"kind":"abandoned"}`, "m1"))
	if err != nil || first.Duplicate || first.Stream != bus.StreamFeedback {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := js.PublishMsg(ctx, msg(subj, "c1", `{"kind":"abandoned"}`, "m2"))
	if err != nil || !again.Duplicate || again.Sequence != first.Sequence {
		t.Fatalf("again: %+v, %v", again, err)
	}
	for _, c := range []struct {
		name string
		m    *nats.Msg
		code int
	}{
		{"bad score", msg(subj, "c1", `{"kind":"satisfaction","score":0}`, "m3"), 400},
		{"conversation disagrees with the subject", msg(subj, "c2", `{"kind":"resolved"}`, "m4"), 400},
		{"another note for abandoned", msg(subj, "c1", `{"kind":"abandoned","note":"x"}`, "m5"), 409},
	} {
		_, err := js.PublishMsg(ctx, c.m)
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.Code != c.code {
			t.Errorf("%s: %v, want code %d", c.name, err, c.code)
		}
	}
	for _, subject := range []string{bus.FeedbackSubject("acme", "c9", schemas.FeedbackResolved), bus.IngestSubject("globex", "c9", bus.IngestFeedback)} {
		if !bustest.Denied(t, nc, msg(subject, "c9", `{"kind":"resolved"}`, "m6")) {
			t.Errorf("acme published on %s: want a permissions violation", subject)
		}
	}
	s, err := h.JS.Stream(ctx, bus.StreamFeedback)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.GetLastMsgForSubject(ctx, bus.FeedbackSubject("acme", "c1", schemas.FeedbackAbandoned))
	if err != nil || stored.Header.Get(bus.HeaderMsgID) != streams.FeedbackID("acme", "c1", schemas.FeedbackAbandoned) {
		t.Fatalf("stored: %+v, %v", stored, err)
	}
	if n := h.StreamMsgs(t, bus.StreamFeedback); n != 1 {
		t.Errorf("REIN_FEEDBACK holds %d events, want 1", n)
	}
}

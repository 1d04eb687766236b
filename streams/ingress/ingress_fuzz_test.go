package ingress_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
)

// FuzzIngressHTTP drives POST /v1/turns with arbitrary bodies, content
// types and CloudEvents headers (the HTTP binding, structured and binary).
// The handler never panics, answers one of its documented codes with a
// JSON body, and stores a turn only when it says so — on the subject of
// the event's own tenant, decodable by every consumer.
func FuzzIngressHTTP(f *testing.F) {
	f.Add("application/cloudevents+json", "", "", "", `{"specversion":"1.0","id":"s1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c2","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`)
	f.Add("application/json", "dev.rein.turn.v1", "acme", "1", `{"role":"user","text":"cancel that one","turn":1}`)
	f.Add("application/json", "dev.rein.turn.v1", "ac.me", "1", `{"role":"user","text":"x"}`)
	f.Add("application/json", "dev.rein.task.v1", "acme", "9007199254740993", `{"turn":1}`)
	f.Add("text/plain", "", "", "", "hello")
	f.Add("application/cloudevents-batch+json", "", "", "", `[{"specversion":"1.0"}]`)
	h := rtest.StartJetStream(f, "")
	in := newIngress(f, ingress.Config{MaxBytes: 1024}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}))
	f.Fuzz(func(t *testing.T, contentType, ceType, tenant, turn, body string) {
		r := httptest.NewRequest(http.MethodPost, "/v1/turns", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		if ceType != "" {
			r.Header.Set("ce-specversion", "1.0")
			r.Header.Set("ce-id", "fuzz")
			r.Header.Set("ce-source", "/fuzz")
			r.Header.Set("ce-type", ceType)
			r.Header.Set("ce-tenant", tenant)
			r.Header.Set("ce-conversation", "c1")
			r.Header.Set("ce-turn", turn)
		}
		before := h.StreamMsgs(t, bus.StreamTurns)
		w := httptest.NewRecorder()
		in.ServeHTTP(w, r)
		var resp struct {
			Subject  string `json:"subject"`
			Sequence uint64 `json:"seq"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil {
			t.Fatalf("status %d with a body that is not JSON: %q", w.Code, w.Body.String())
		}
		switch w.Code {
		case http.StatusAccepted, http.StatusOK:
			tenantOf, _, ok := streams.SubjectIDs(resp.Subject)
			if !ok || resp.Sequence == 0 {
				t.Fatalf("accepted without a subject and sequence: %s", w.Body.String())
			}
			msg, err := h.JS.Stream(context.Background(), bus.StreamTurns)
			if err != nil {
				t.Fatal(err)
			}
			stored, err := msg.GetMsg(context.Background(), resp.Sequence)
			if err != nil {
				t.Fatalf("accepted turn %d not stored: %v", resp.Sequence, err)
			}
			d, err := streams.Decode(stored.Subject, stored.Header, stored.Data, 0)
			if err != nil {
				t.Fatalf("a stored turn does not decode: %v", err)
			}
			if d.Meta.Tenant != tenantOf || stored.Subject != resp.Subject {
				t.Fatalf("stored on %s for tenant %s, event of tenant %s", stored.Subject, tenantOf, d.Meta.Tenant)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusConflict:
			if w.Code != http.StatusConflict && h.StreamMsgs(t, bus.StreamTurns) != before {
				t.Fatalf("refused with %d yet a message was stored", w.Code)
			}
		default:
			t.Fatalf("unexpected status %d: %s", w.Code, w.Body.String())
		}
	})
}

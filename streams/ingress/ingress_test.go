package ingress_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
)

func TestHTTPIngress(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	srv := httptest.NewServer(newIngress(t, ingress.Config{MaxBytes: 1024, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})))
	defer srv.Close()

	binary := func(tenant, body string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		r.Header.Set("ce-specversion", "1.0")
		r.Header.Set("ce-id", "b-"+tenant)
		r.Header.Set("ce-source", "/platform")
		r.Header.Set("ce-type", "dev.rein.turn.v1")
		r.Header.Set("ce-tenant", tenant)
		r.Header.Set("ce-conversation", "c1")
		r.Header.Set("ce-turn", "1")
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	structured := func(body string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/cloudevents+json")
		return r
	}
	cases := []struct {
		name  string
		req   *http.Request
		code  int
		field string
	}{
		{"binary ok", binary("acme", `{"role":"user","text":"cancel that one","turn":1}`), 202, ""},
		{"structured ok", structured(`{"specversion":"1.0","id":"s1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c2","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`), 202, ""},
		{"bad tenant", binary("ac.me", `{"role":"user","text":"x"}`), 400, "tenant"},
		// The field comes from the error's type, not its text: this
		// conversation id names another attribute.
		{"bad conversation", structured(`{"specversion":"1.0","id":"s5","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"tenant.x","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`), 400, "conversation"},
		{"missing tenant", structured(`{"specversion":"1.0","id":"s6","source":"/p","type":"dev.rein.turn.v1","conversation":"c6","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`), 400, "tenant"},
		{"bad turn", structured(`{"specversion":"1.0","id":"s7","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c7","turn":"x","datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`), 400, "turn"},
		{"bad role", binary("acme", `{"role":"robot","text":"x"}`), 400, "data/role"},
		{"missing text", binary("acme", `{"role":"user"}`), 400, "data"},
		{"wrong type", structured(`{"specversion":"1.0","id":"s2","source":"/p","type":"dev.rein.task.v1","tenant":"acme","conversation":"c2","data":{}}`), 400, "type"},
		{"turn disagrees", binary("acme", `{"role":"user","text":"x","turn":5}`), 400, "turn"},
		{"user turn without a number", structured(`{"specversion":"1.0","id":"s3","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c3","datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`), 400, "turn"},
		{"agent turn without a number", structured(`{"specversion":"1.0","id":"s4","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c3","datacontenttype":"application/json","data":{"role":"agent","text":"hello"}}`), 202, ""},
		{"oversize", binary("acme", `{"role":"user","text":"`+strings.Repeat("a", 8000)+`"}`), 413, "data"},
		{"not a cloudevent", func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("hello"))
			return r
		}(), 400, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(c.req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != c.code {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, c.code, body)
			}
			if c.code == 202 {
				if seq, _ := body["seq"].(float64); seq < 1 {
					t.Errorf("no stream sequence in %v", body)
				}
				return
			}
			if f, _ := body["field"].(string); !strings.HasPrefix(f, c.field) {
				t.Errorf("field %q, want %q (%v)", f, c.field, body)
			}
			if e, _ := body["error"].(string); e == "" {
				t.Errorf("no error message in %v", body)
			}
		})
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 3 {
		t.Errorf("REIN_TURNS holds %d, want only the 3 accepted turns", n)
	}
}

// A turn JetStream cannot store within the publisher's retry window is
// answered 503 with Retry-After, so a client knows to send it again (its
// id deduplicates the copy stored meanwhile, if any).
func TestIngressUnavailableSaysWhenToRetry(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	if err := h.JS.DeleteStream(t.Context(), bus.StreamTurns); err != nil {
		t.Fatal(err)
	}
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{RetryFor: time.Millisecond})
	srv := httptest.NewServer(newIngress(t, ingress.Config{MaxBytes: 1024, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst}, pub))
	defer srv.Close()
	body := `{"specversion":"1.0","id":"u1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c1","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`
	resp, err := http.Post(srv.URL, "application/cloudevents+json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e ingress.IngressError
	_ = json.NewDecoder(resp.Body).Decode(&e)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || e.Error == "" {
		t.Fatalf("no stream: %d, Retry-After %q, error %q; want 503 with Retry-After and the cause", resp.StatusCode, resp.Header.Get("Retry-After"), e.Error)
	}
}

// newIngress is ingress.New for a test, storing with pub.
func newIngress(t testing.TB, cfg ingress.Config, pub *streams.Publisher) *ingress.Ingress {
	t.Helper()
	in, err := ingress.New(cfg, ingress.Deps{Publisher: pub})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// tokens are the bearer tokens of list.
func tokens(t testing.TB, list ...telemetry.Token) *telemetry.Tokens {
	t.Helper()
	tk, err := telemetry.NewTokens(list)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

package streams_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
)

func TestHTTPIngress(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	srv := httptest.NewServer(streams.NewIngress(streams.NewPublisher(h.JS, nil), 1024, nil))
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
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 3 {
		t.Errorf("REIN_TURNS holds %d, want only the 3 accepted turns", n)
	}
}

// TestHTTPIngressTenantBindingAndRateLimit: behind a port with tokens, a
// token posts only its own tenant's turns (401 without one, 403 for
// another tenant), and a burst past the tenant's limit gets 429 with
// Retry-After while another tenant is unaffected. Nothing refused is stored.
func TestHTTPIngressTenantBindingAndRateLimit(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const acmeTok, opsTok = "acme-token-0123456789", "ops-token-0123456789"
	toks, err := telemetry.NewTokens([]telemetry.TokenSpec{
		{Name: "acme", Token: acmeTok, Tenants: []string{"acme"}, Roles: []telemetry.Role{telemetry.RoleIngress}},
		{Name: "ops", Token: opsTok, Tenants: []string{telemetry.AllTenants}, Roles: []telemetry.Role{telemetry.RoleOperator}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := telemetry.NewServer(telemetry.NewRegistry(), quiet)
	in := streams.NewIngress(streams.NewPublisher(h.JS, nil), 1024, nil).WithLimits(telemetry.NewTenantLimiter(0.01, 3, 100))
	srv.HandleRole("POST /v1/turns", telemetry.RoleIngress, in)
	if err := srv.Serve(telemetry.HTTPConfig{Addr: "127.0.0.1:0", Tokens: toks}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	post := func(token, tenant, conv string) *http.Response {
		t.Helper()
		body := `{"specversion":"1.0","id":"` + tenant + conv + `","source":"/p","type":"dev.rein.turn.v1","tenant":"` + tenant +
			`","conversation":"` + conv + `","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`
		r, _ := http.NewRequest(http.MethodPost, "http://"+srv.Addr()+"/v1/turns", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/cloudevents+json")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if got := post("", "acme", "c0").StatusCode; got != 401 {
		t.Errorf("no token: %d, want 401", got)
	}
	if got := post(acmeTok, "globex", "c0").StatusCode; got != 403 {
		t.Errorf("acme's token posting globex's turn: %d, want 403", got)
	}
	for i := range 3 {
		if got := post(acmeTok, "acme", fmt.Sprintf("c%d", i)).StatusCode; got != 202 {
			t.Fatalf("turn %d within the burst: %d", i+1, got)
		}
	}
	resp := post(acmeTok, "acme", "c9")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the burst: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := post(opsTok, "globex", "c1").StatusCode; got != 202 {
		t.Errorf("another tenant during acme's burst: %d, want 202", got)
	}
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 4 {
		t.Errorf("REIN_TURNS holds %d turns, want the 4 accepted", n)
	}
}

package streams_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// postTurn posts a binary-mode user turn with the caller's event id.
func postTurn(t *testing.T, url, id, tenant, conv string, turn int, text string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": id, "ce-source": "/platform",
		"ce-type": schemas.TypeTurn, "ce-tenant": tenant, "ce-conversation": conv, "Content-Type": "application/json"} {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// The id a caller chooses is not what the stream deduplicates on: tenant
// B reusing tenant A's event id does not suppress A's turn; the same turn
// sent twice is reported as a duplicate; the same turn number with other
// text is a conflict, dead-lettered, not silently dropped.
func TestIngressIdsTheCallerCannotSteer(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	srv := httptest.NewServer(streams.NewIngress(streams.NewPublisher(h.JS, nil), 4096, nil))
	defer srv.Close()

	if code, body := postTurn(t, srv.URL, "evt-1", "tenant-b", "c1", 1, "hello from b"); code != 202 {
		t.Fatalf("tenant b: %d %v", code, body)
	}
	if code, body := postTurn(t, srv.URL, "evt-1", "tenant-a", "c1", 1, "hello from a"); code != 202 || body["duplicate"] == true {
		t.Fatalf("tenant a with b's event id: %d %v — its turn was suppressed", code, body)
	}
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 2 {
		t.Fatalf("REIN_TURNS holds %d turns, want both tenants' 2", n)
	}

	code, body := postTurn(t, srv.URL, "evt-2", "tenant-a", "c1", 1, "hello from a")
	if code != 200 || body["duplicate"] != true {
		t.Fatalf("the same turn again: %d %v, want 200 duplicate", code, body)
	}
	code, body = postTurn(t, srv.URL, "evt-3", "tenant-a", "c1", 1, "something else entirely")
	if code != 409 || !strings.Contains(body["error"].(string), streams.ReasonConflictingDuplicate) {
		t.Fatalf("the same turn number with other text: %d %v, want 409 conflicting_duplicate", code, body)
	}
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 2 {
		t.Fatalf("REIN_TURNS holds %d turns after a duplicate and a conflict, want 2", n)
	}
	rtest.CheckFor(t, 10*time.Second, "the conflict dead-lettered", func() bool {
		return h.StreamMsgs(t, streams.StreamDLQ) == 1
	})
	s, _ := h.JS.Stream(context.Background(), streams.StreamDLQ)
	raw, err := s.GetLastMsgForSubject(context.Background(), streams.DLQSubject(streams.StageIngress))
	if err != nil {
		t.Fatal(err)
	}
	var dl schemas.DeadLetter
	d, err := streams.Decode(raw.Subject, raw.Header, raw.Data, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Payload(&dl); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dl.Reason, streams.ReasonConflictingDuplicate) || !strings.Contains(string(dl.Data), "something else") {
		t.Fatalf("dead letter %q / %s: want the conflicting turn with reason conflicting_duplicate", dl.Reason, dl.Data)
	}
}

// Output ids keep tenants apart even when ids contain the old separator.
func TestEventIDsDoNotCollideAcrossTenants(t *testing.T) {
	if a, b := schemas.EventID("agent", "a-b", "c", 1), schemas.EventID("agent", "a", "b-c", 1); a == b {
		t.Fatalf("tenant a-b/c and tenant a/b-c share the id %q", a)
	}
}

// A tenant over its rate gets 429 with Retry-After; another tenant is not
// held back by it.
func TestIngressLimitsEachTenant(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	in := streams.NewIngress(streams.NewPublisher(h.JS, nil), 4096, nil)
	in.SetTenantRate(0.5, 2)
	srv := httptest.NewServer(in)
	defer srv.Close()
	for turn := 1; turn <= 2; turn++ {
		if code, body := postTurn(t, srv.URL, "e", "busy", "c1", turn, "hello"); code != 202 {
			t.Fatalf("turn %d within the burst: %d %v", turn, code, body)
		}
	}
	body, _ := json.Marshal(schemas.Turn{Role: schemas.RoleUser, Text: "one more", Turn: 3})
	r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "x", "ce-source": "/p", "ce-type": schemas.TypeTurn,
		"ce-tenant": "busy", "ce-conversation": "c1", "Content-Type": "application/json"} {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the rate: %d, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if code, body := postTurn(t, srv.URL, "e2", "quiet", "c1", 1, "hello"); code != 202 {
		t.Fatalf("another tenant: %d %v", code, body)
	}
}

// With tokens set, a turn needs a bearer token bound to its tenant: none
// or an unknown one → 401, another tenant's → 403.
func TestIngressTokensBindTenants(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	in := streams.NewIngress(streams.NewPublisher(h.JS, nil), 4096, nil)
	if err := in.SetTokenList([]telemetry.Token{{Token: "acme-token-0123456789", Tenants: []string{"acme"}}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	defer srv.Close()
	post := func(token, tenant string) int {
		body, _ := json.Marshal(schemas.Turn{Role: schemas.RoleUser, Text: "hello", Turn: 1})
		r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(string(body)))
		for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": "x", "ce-source": "/p", "ce-type": schemas.TypeTurn,
			"ce-tenant": tenant, "ce-conversation": "c1", "Content-Type": "application/json"} {
			r.Header.Set(k, v)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		token, tenant string
		want          int
	}{
		{"", "acme", http.StatusUnauthorized},
		{"not-a-token-at-all", "acme", http.StatusUnauthorized},
		{"acme-token-0123456789", "globex", http.StatusForbidden},
		{"acme-token-0123456789", "acme", http.StatusAccepted},
	} {
		if got := post(c.token, c.tenant); got != c.want {
			t.Errorf("token %q for %s: %d, want %d", c.token, c.tenant, got, c.want)
		}
	}
	if n := h.StreamMsgs(t, streams.StreamTurns); n != 1 {
		t.Fatalf("%d turns stored, want only the authorised one", n)
	}
	if err := in.SetTokenList([]telemetry.Token{{Token: "short", Tenants: []string{"*"}}}); err == nil {
		t.Fatal("a 5-character token accepted")
	}
}

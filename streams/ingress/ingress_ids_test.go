package ingress_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
)

// turnRequest is a binary-mode user turn with the caller's event id.
func turnRequest(url, id, tenant, conv string, turn int, text string) *http.Request {
	body, _ := json.Marshal(schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	r, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(body)))
	for k, v := range map[string]string{"ce-specversion": "1.0", "ce-id": id, "ce-source": "/platform",
		"ce-type": schemas.TypeTurn, "ce-tenant": tenant, "ce-conversation": conv, "Content-Type": "application/json"} {
		r.Header.Set(k, v)
	}
	return r
}

// postTurn posts a binary-mode user turn with the caller's event id.
func postTurn(t *testing.T, url, id, tenant, conv string, turn int, text string) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(turnRequest(url, id, tenant, conv, turn, text))
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
	srv := httptest.NewServer(newIngress(t, ingress.Config{MaxBytes: 4096, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})))
	defer srv.Close()

	if code, body := postTurn(t, srv.URL, "evt-1", "tenant-b", "c1", 1, "hello from b"); code != 202 {
		t.Fatalf("tenant b: %d %v", code, body)
	}
	if code, body := postTurn(t, srv.URL, "evt-1", "tenant-a", "c1", 1, "hello from a"); code != 202 || body["duplicate"] == true {
		t.Fatalf("tenant a with b's event id: %d %v — its turn was suppressed", code, body)
	}
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 2 {
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
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 2 {
		t.Fatalf("REIN_TURNS holds %d turns after a duplicate and a conflict, want 2", n)
	}
	rtest.CheckFor(t, 10*time.Second, "the conflict dead-lettered", func() bool {
		return h.StreamMsgs(t, bus.StreamDLQ) == 1
	})
	s, _ := h.JS.Stream(context.Background(), bus.StreamDLQ)
	raw, err := s.GetLastMsgForSubject(context.Background(), bus.DLQSubject(bus.StageIngress))
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
	in := newIngress(t, ingress.Config{MaxBytes: 4096, TenantRate: 0.5, TenantBurst: 2}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}))
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
	in := newIngress(t, ingress.Config{MaxBytes: 4096, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst,
		Tokens: tokens(t, telemetry.Token{Token: "acme-token-0123456789", Tenants: []string{"acme"}})}, streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}))
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
	if n := h.StreamMsgs(t, bus.StreamTurns); n != 1 {
		t.Fatalf("%d turns stored, want only the authorised one", n)
	}
	if _, err := telemetry.NewTokens([]telemetry.Token{{Token: "short", Tenants: []string{"*"}}}); err == nil {
		t.Fatal("a 5-character token accepted")
	}
}

// ingressAs is the HTTP ingress publishing under the ingress identity,
// with the real permission table, as rein serve runs it.
func ingressAs(t *testing.T, h *rtest.JS, cfg ingress.Config) (*ingress.Ingress, *httptest.Server) {
	t.Helper()
	_, ijs := h.ConnectAs(t, natsserver.IdentityIngress, nil)
	cfg.MaxBytes = 4096
	in := newIngress(t, cfg, streams.NewPublisher(ijs, nil, streams.PublisherConfig{}))
	srv := httptest.NewServer(in)
	t.Cleanup(srv.Close)
	return in, srv
}

// quickClient gives up on an answer after 5 s: a conflict once hung for
// 85 s (its dead letter refused to the ingress identity).
var quickClient = &http.Client{Timeout: 5 * time.Second}

func postWith(t *testing.T, c *http.Client, url, tenant, conv string, turn int, text string) (int, map[string]any) {
	t.Helper()
	old := http.DefaultClient
	http.DefaultClient = c
	defer func() { http.DefaultClient = old }()
	return postTurn(t, url, "e", tenant, conv, turn, text)
}

// TestIngressConflictUnderItsIdentity: under the ingress identity, a
// conflicting turn is answered 409 at once with its dead letter written.
// On the code before, the identity could not publish rein.dlq.ingress and
// the request hung until the publisher gave up.
func TestIngressConflictUnderItsIdentity(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, srv := ingressAs(t, h, ingress.DefaultConfig())
	if code, body := postWith(t, quickClient, srv.URL, "acme", "c1", 1, "hello"); code != 202 {
		t.Fatalf("first: %d %v", code, body)
	}
	if code, body := postWith(t, quickClient, srv.URL, "acme", "c1", 1, "something else"); code != 409 {
		t.Fatalf("conflict: %d %v, want 409", code, body)
	}
	if n := h.StreamMsgs(t, bus.StreamDLQ); n != 1 {
		t.Fatalf("%d dead letters, want the conflict's", n)
	}
}

// TestIngressConflictPastTheDuplicateWindow: once the stream has forgotten
// the turn's id, the same number with other text is still a 409 (it was
// stored as a second turn 1), and the same turn still a duplicate.
func TestIngressConflictPastTheDuplicateWindow(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const window = 100 * time.Millisecond
	p := natsserver.DefaultProvision()
	p.Streams = map[string]natsserver.StreamSettings{bus.StreamTurns: {Duplicate: window}}
	ctx := context.Background()
	if err := natsserver.Provision(ctx, h.JS, p, nil); err != nil {
		t.Fatal(err)
	}
	_, srv := ingressAs(t, h, ingress.DefaultConfig())
	code, first := postWith(t, quickClient, srv.URL, "acme", "c1", 1, "hello")
	if code != 202 {
		t.Fatalf("first: %d %v", code, first)
	}
	// A probe id stored after the turn: once the stream takes it again as
	// new, the turn's id (older) is forgotten too.
	probe := func() bool {
		ack, err := h.JS.PublishMsg(ctx, &nats.Msg{Subject: bus.TurnSubject("probe", "p", schemas.RoleUser), Data: []byte("probe"),
			Header: nats.Header{bus.HeaderMsgID: []string{"probe"}}})
		if err != nil {
			t.Fatal(err)
		}
		return !ack.Duplicate
	}
	probe()
	rtest.CheckFor(t, 10*time.Second, "the duplicate window passed", probe)

	if code, body := postWith(t, quickClient, srv.URL, "acme", "c1", 1, "something else"); code != 409 {
		t.Fatalf("conflict past the window: %d %v, want 409", code, body)
	}
	code, body := postWith(t, quickClient, srv.URL, "acme", "c1", 1, "hello")
	if code != 200 || body["duplicate"] != true || body["seq"] != first["seq"] {
		t.Fatalf("the same turn past the window: %d %v, want 200 duplicate of seq %v", code, body, first["seq"])
	}
	if code, body := postWith(t, quickClient, srv.URL, "acme", "c1", 2, "next"); code != 202 {
		t.Fatalf("turn 2: %d %v", code, body)
	}
	n := 0
	if err := streams.ReadSubject(ctx, h.JS, bus.StreamTurns, bus.TurnSubject("acme", "c1", schemas.RoleUser), 0, 0, func(streams.Raw) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("acme/c1 holds %d user turns (%v), want turns 1 and 2 once each", n, err)
	}
	rtest.CheckFor(t, 10*time.Second, "the conflict dead-lettered", func() bool { return h.StreamMsgs(t, bus.StreamDLQ) == 1 })
}

// TestIngressBoundsEachTenantsRequestsInFlight: a tenant whose requests
// hang (a stalled store) holds at most its bound of them; more are
// answered 429 with Retry-After at once, and another tenant's POST
// completes meanwhile.
func TestIngressBoundsEachTenantsRequestsInFlight(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	const bound = 4
	in, srv := ingressAs(t, h, ingress.Config{TenantInFlight: bound})
	release := make(chan struct{})
	defer close(release)
	held := make(chan struct{}, 64)
	ingress.SetIngressPublish(in, func(ctx context.Context, p *streams.Publisher, m *nats.Msg) (streams.TurnResult, error) {
		if strings.HasPrefix(m.Subject, bus.TurnSubject("flood", "", "")[:len("rein.turns.flood.")]) {
			held <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return streams.TurnResult{}, ctx.Err()
		}
		return streams.PublishTurn(ctx, p, m)
	})
	for i := range bound {
		go func() { _, _ = postTurn(t, srv.URL, "e", "flood", "c", i+1, "hang") }()
	}
	for range bound {
		<-held
	}
	const more = 20
	for i := range more {
		resp, err := quickClient.Do(turnRequest(srv.URL, "x", "flood", "c", 100+i, "more"))
		if err != nil {
			t.Fatalf("flood request %d: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("flood request %d past the bound: %d, Retry-After %q; want 429", i, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if code, body := postWith(t, quickClient, srv.URL, "quiet", "c1", 1, "hello"); code != 202 {
		t.Fatalf("another tenant during the flood: %d %v", code, body)
	}
}

// TestStructuredTurnAbove32Bits: a structured-mode turn numbered past
// 2^31 is taken (sdk-go read the number as a 32-bit Integer and refused
// it), and one past 2^53-1 is refused naming the turn.
func TestStructuredTurnAbove32Bits(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, srv := ingressAs(t, h, ingress.DefaultConfig())
	post := func(turn string) (int, map[string]any) {
		body := `{"specversion":"1.0","id":"s1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c1","turn":` + turn +
			`,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`
		resp, err := quickClient.Post(srv.URL, "application/cloudevents+json; charset=utf-8", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, body := post("2147483648"); code != 202 {
		t.Fatalf("turn 2^31: %d %v", code, body)
	}
	d := lastTurn(t, h, bus.TurnSubject("acme", "c1", schemas.RoleUser))
	if d.Meta.Turn != 2147483648 {
		t.Fatalf("stored as turn %d", d.Meta.Turn)
	}
	if code, body := post("9007199254740992"); code != 400 || body["field"] != "turn" {
		t.Fatalf("turn past 2^53-1: %d %v, want 400 on turn", code, body)
	}
}

func lastTurn(t *testing.T, h *rtest.JS, subject string) streams.Decoded {
	t.Helper()
	s, err := h.JS.Stream(context.Background(), bus.StreamTurns)
	if err != nil {
		t.Fatal(err)
	}
	d, found, err := streams.LastEvent(context.Background(), s, subject)
	if err != nil || !found {
		t.Fatalf("last on %s: %v %v", subject, found, err)
	}
	return d
}

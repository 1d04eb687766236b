package bustest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
)

func TurnEvent(t testing.TB, tenant, conv string, turn int, text string) *streams.Out {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, schemas.EventID("turn", tenant, conv, turn)+"-user", "/test",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn},
		schemas.Turn{Role: schemas.RoleUser, Text: text, Turn: turn})
	if err != nil {
		t.Fatalf("new event: %v", err)
	}
	return &streams.Out{Stream: bus.StreamTurns, Subject: bus.TurnSubject(tenant, conv, schemas.RoleUser), Event: &ev}
}

var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// runConsumer starts a consumer on user turns and returns a stop function
// that cancels it and waits for Run to return.
func RunConsumer(t *testing.T, h *rtest.JS, cfg consume.ConsumerConfig, reg prometheus.Registerer, fn consume.Handler) (stop func()) {
	t.Helper()
	if cfg.Stage == "" {
		cfg.Stage = "test"
	}
	if cfg.Stream == "" {
		cfg.Stream, cfg.Durable, cfg.Filter = bus.StreamTurns, "test", []string{bus.UserTurnsAll}
	}
	pub := streams.NewPublisher(h.JS, reg, streams.PublisherConfig{})
	c, err := consume.NewConsumer(cfg, consume.ConsumerDeps{JS: h.JS, Publisher: pub, Logger: Quiet, Registerer: reg}, fn)
	if err != nil {
		t.Fatal(err)
	}
	return rtest.Run(t, "consumer", c.Run)
}

func PublishTurns(t *testing.T, h *rtest.JS, outs []streams.Out) {
	t.Helper()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	ctx := context.Background()
	for i := 0; i < len(outs); i += 500 {
		if _, err := pub.PublishAll(ctx, outs[i:min(i+500, len(outs))]...); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
}

// startIngest serves the NATS ingest under the ingress identity, as rein
// serve does, on a server that knows the tenant identities of tenants.
func StartIngest(t *testing.T, tenants ...string) (*rtest.JS, map[string]*nats.Conn) {
	t.Helper()
	dir := t.TempDir()
	seeds := map[string]string{}
	for _, tn := range tenants {
		seed, err := natsserver.AddTenantIngress(dir, tn)
		if err != nil {
			t.Fatal(err)
		}
		seeds[tn] = seed
	}
	h := rtest.StartJetStream(t, dir)
	inc, ijs := h.ConnectAs(t, natsserver.IdentityIngress, nil)
	in, err := ingress.New(ingress.Config{MaxBytes: 4096, TenantRate: ingress.DefaultTenantRate, TenantBurst: ingress.DefaultTenantBurst}, ingress.Deps{Publisher: streams.NewPublisher(ijs, nil, streams.PublisherConfig{})})
	if err != nil {
		t.Fatal(err)
	}
	stop, err := in.ListenNATS(inc, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	conns := map[string]*nats.Conn{}
	for tn, seed := range seeds {
		nc, err := natsserver.Connect(natsserver.ConnectConfig{InProcess: h.Server, NkeyFile: seed, InboxPrefix: bus.TenantInbox(tn)})
		if err != nil {
			t.Fatalf("connect as %s's ingress: %v", tn, err)
		}
		t.Cleanup(nc.Close)
		conns[tn] = nc
	}
	return h, conns
}

// turnMsg is a binary-mode turn as a platform sends it, with the
// Nats-Msg-Id it chooses.
func TurnMsg(t *testing.T, subject, tenant, conv string, turn int, role, text, msgID string) *nats.Msg {
	t.Helper()
	ev, err := schemas.NewEvent(schemas.TypeTurn, "platform-"+msgID, "/platform", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn},
		schemas.Turn{Role: role, Text: text, Turn: turn})
	if err != nil {
		t.Fatal(err)
	}
	m, err := streams.Encode(subject, &ev)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Set(bus.HeaderMsgID, msgID)
	return m
}

// denied tells whether nc's publish of m was refused for permissions.
func Denied(t *testing.T, nc *nats.Conn, m *nats.Msg) bool {
	t.Helper()
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	err := nc.LastError()
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "permissions violation")
}

type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// partitioned provisions the harness's (empty) streams with n partitions.
func Partitioned(t *testing.T, h *rtest.JS, n int) {
	t.Helper()
	p := natsserver.DefaultProvision()
	p.Partitions = n
	if err := natsserver.Provision(t.Context(), h.JS, p, nil); err != nil {
		t.Fatalf("provision %d partitions: %v", n, err)
	}
}

// BadMessages are the malformed inputs every consumer must dead-letter.
func BadMessages(t testing.TB) map[string]*nats.Msg {
	t.Helper()
	good := TurnEvent(t, "acme", "bad-1", 1, "hi")
	base, err := streams.Encode(good.Subject, good.Event)
	if err != nil {
		t.Fatal(err)
	}
	clone := func(mut func(m *nats.Msg)) *nats.Msg {
		h := nats.Header{}
		for k, v := range base.Header {
			h[k] = append([]string(nil), v...)
		}
		m := &nats.Msg{Subject: base.Subject, Header: h, Data: append([]byte(nil), base.Data...)}
		mut(m)
		return m
	}
	return map[string]*nats.Msg{
		"malformed JSON":  clone(func(m *nats.Msg) { m.Data = []byte(`{"role":"user",`) }),
		"missing ce-type": clone(func(m *nats.Msg) { m.Header.Del("ce-type") }),
		"unknown type":    clone(func(m *nats.Msg) { m.Header.Set("ce-type", "com.example.other") }),
		"bad tenant id":   clone(func(m *nats.Msg) { m.Header.Set("ce-tenant", "ac me!") }),
		"subject mismatch": clone(func(m *nats.Msg) {
			m.Subject = "rein.turns.other.bad-1.user"
		}),
		"oversize":      clone(func(m *nats.Msg) { m.Data = bytes.Repeat([]byte("a"), streams.DefaultMaxEventBytes+1) }),
		"invalid UTF-8": clone(func(m *nats.Msg) { m.Data = []byte("{\"role\":\"user\",\"text\":\"\xff\xfe\"}") }),
		"schema: bad role": clone(func(m *nats.Msg) {
			m.Data = []byte(`{"role":"robot","text":"x","turn":1}`)
		}),
		"no headers, not JSON": {Subject: base.Subject, Data: []byte("plain text")},
	}
}

// StepsBothWays is the same turn-1 steps of tenant stored two ways: as one
// dev.rein.step.v1 each in conversation "single" and as one
// dev.rein.steps.v1 in conversation "batch", all at one time so that a
// reader orders them by step. A reader of steps shows both alike.
func StepsBothWays(t testing.TB, tenant string, steps []schemas.Step) []streams.Out {
	t.Helper()
	var outs []streams.Out
	add := func(conv, typ, id string, data any) {
		e, err := schemas.NewEvent(typ, id, "", schemas.Meta{Tenant: tenant, Conversation: conv, Turn: 1}, data)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, streams.Out{Stream: bus.StreamSteps, Subject: bus.StepSubject(tenant, conv), Event: &e})
	}
	for _, s := range steps {
		add("single", schemas.TypeStep, schemas.StepEventID(tenant, "single", 1, s.Step), s)
	}
	add("batch", schemas.TypeSteps, schemas.StepsEventID(tenant, "batch", 1), schemas.Steps{Turn: 1, Steps: steps})
	at := outs[0].Event.Time()
	for _, o := range outs {
		o.Event.SetTime(at)
	}
	return outs
}

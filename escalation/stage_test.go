package escalation_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/escalation"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// End to end on JetStream: a webhook receiver that fails its first two
// attempts still gets each escalation and report exactly once in effect,
// with a valid signature, and the JSONL audit file holds every event.
func TestStageDeliversToWebhookAndJSONL(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	secret := []byte("s3cret-0123456789abcdef0123456789abcdef")
	t.Setenv("REIN_TEST_WEBHOOK_SECRET", string(secret))

	var mu sync.Mutex
	attempts := 0
	accepted := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := escalation.VerifySignature(secret, r.Header.Get(escalation.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("bad signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &ev)
		accepted[ev.ID]++
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	st, err := escalation.New(escalation.Config{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{URL: recv.URL, SecretEnv: "REIN_TEST_WEBHOOK_SECRET", Attempts: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}},
		{JSONL: &escalation.JSONLConfig{Path: audit, SyncInterval: time.Millisecond}},
	}}, escalation.Deps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()

	pub := streams.NewPublisher(h.JS, nil)
	meta := schemas.Meta{Tenant: "acme", Conversation: "e1", Turn: 1}
	esc, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "e1", 1), "", meta,
		schemas.Escalation{Turn: 1, Summary: "wants a hotel", ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := schemas.NewEvent(schemas.TypeReport, schemas.EventID("report", "acme", "e1", 1), "", meta,
		schemas.Report{Turn: 1, Report: "which booking?", ErrorType: "anaphora"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.PublishAll(context.Background(),
		streams.Out{Stream: streams.StreamOutcomes, Subject: streams.EscalationSubject("acme", "e1"), Event: &esc},
		streams.Out{Stream: streams.StreamOutcomes, Subject: streams.ReportSubject("acme", "e1"), Event: &rep}); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 20*time.Second, "both events accepted by the webhook", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(accepted) == 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("%s accepted %d times", id, n)
		}
	}
	mu.Unlock()
	evs, err := escalation.ReadAuditFiles(audit)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, e := range evs {
		ids[e.ID()] = true
	}
	if !ids[esc.ID()] || !ids[rep.ID()] {
		t.Errorf("audit file holds %v", ids)
	}
}

// Every sink instance gets every event: with two webhooks configured, both
// receivers get each escalation and report (before the fix the second
// webhook, tracked under the same kind name as the first, got nothing),
// and each is counted under its own name.
func TestStageDeliversToEveryWebhook(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	secret := "two-hooks-0123456789abcdef0123456789abcdef"
	t.Setenv("REIN_TEST_WEBHOOK_SECRET", secret)
	var mu sync.Mutex
	got := map[string]map[string]int{} // receiver → event id → requests
	receiver := func(name string, failFirst int) *httptest.Server {
		requests := 0
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if err := escalation.VerifySignature([]byte(secret), r.Header.Get(escalation.SignatureHeader), body, time.Now(), time.Minute); err != nil {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			requests++
			if requests <= failFirst {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			var ev struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(body, &ev)
			if got[name] == nil {
				got[name] = map[string]int{}
			}
			got[name][ev.ID]++
		}))
	}
	a, b := receiver("a", 0), receiver("b", 1) // b fails once: its own retries, not a's
	defer a.Close()
	defer b.Close()
	reg := prometheus.NewRegistry()
	hook := func(url string) escalation.SinkConfig {
		return escalation.SinkConfig{Webhook: &escalation.WebhookConfig{URL: url, SecretEnv: "REIN_TEST_WEBHOOK_SECRET",
			BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}}
	}
	st, err := escalation.New(escalation.Config{Sinks: []escalation.SinkConfig{hook(a.URL), hook(b.URL)}},
		escalation.Deps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil), Logger: slog.New(slog.DiscardHandler), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()

	meta := schemas.Meta{Tenant: "acme", Conversation: "two", Turn: 1}
	esc, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "two", 1), "", meta,
		schemas.Escalation{Turn: 1, Summary: "wants a hotel", ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := schemas.NewEvent(schemas.TypeReport, schemas.EventID("report", "acme", "two", 2), "",
		schemas.Meta{Tenant: "acme", Conversation: "two", Turn: 2}, schemas.Report{Turn: 2, Report: "which one?", ErrorType: "anaphora"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil).PublishAll(context.Background(),
		streams.Out{Stream: streams.StreamOutcomes, Subject: streams.EscalationSubject("acme", "two"), Event: &esc},
		streams.Out{Stream: streams.StreamOutcomes, Subject: streams.ReportSubject("acme", "two"), Event: &rep}); err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, 20*time.Second, "both receivers got both events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["a"]) == 2 && len(got["b"]) == 2
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for name, ids := range got {
		for id, n := range ids {
			if n != 1 {
				t.Errorf("receiver %s accepted %s %d times", name, id, n)
			}
		}
	}
	mu.Unlock()
	for _, c := range []struct {
		sink, outcome string
		want          float64
	}{{"webhook", "delivered", 2}, {"webhook-2", "delivered", 2}, {"webhook-2", "retry", 1}, {"webhook", "retry", 0}} {
		if n := promtestutil.ToFloat64(mustDeliveries(t, reg).WithLabelValues(c.sink, escalation.KindWebhook, c.outcome)); n != c.want {
			t.Errorf("rein_sink_deliveries_total{sink=%q,outcome=%q} = %v, want %v", c.sink, c.outcome, n, c.want)
		}
	}
}

// mustDeliveries returns the registry's rein_sink_deliveries_total (the
// stage registered it; NewMetrics hands back the registered collectors).
func mustDeliveries(t *testing.T, reg *prometheus.Registry) *prometheus.CounterVec {
	t.Helper()
	m, err := escalation.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	return m.SinkDeliveries
}

// lockedBuffer collects log output from concurrent goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A webhook refusing an event dead-letters it with a reason that names the
// refusal but not the token in the webhook URL's query string, and no log
// line of the stage carries the token either.
func TestStageDeadLetterRedactsWebhookURL(t *testing.T) {
	const token = "SECRET-token-9f8e7d"
	h := rtest.StartJetStream(t, "")
	t.Setenv("REIN_TEST_WEBHOOK_SECRET", "redact-0123456789abcdef0123456789abcdef")
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such hook "+r.URL.RequestURI(), http.StatusNotFound)
	}))
	defer recv.Close()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := escalation.New(escalation.Config{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{URL: recv.URL + "/hook?token=" + token, SecretEnv: "REIN_TEST_WEBHOOK_SECRET"}},
	}}, escalation.Deps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	esc, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "dl", 1), "",
		schemas.Meta{Tenant: "acme", Conversation: "dl", Turn: 1},
		schemas.Escalation{Turn: 1, Summary: "wants a hotel", ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil).Publish(context.Background(), streams.StreamOutcomes, streams.EscalationSubject("acme", "dl"), &esc); err != nil {
		t.Fatal(err)
	}
	var letters []streams.Raw
	rtest.CheckFor(t, 20*time.Second, "the refused escalation dead-lettered", func() bool {
		letters = letters[:0]
		err := streams.ReadStream(context.Background(), h.JS, streams.StreamDLQ, streams.ReadOptions{}, func(r streams.Raw) error {
			letters = append(letters, r)
			return nil
		})
		return err == nil && len(letters) > 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var dl schemas.DeadLetter
	if err := json.Unmarshal(letters[0].Data, &dl); err != nil {
		t.Fatalf("dead letter %s: %v", letters[0].Data, err)
	}
	if !strings.Contains(dl.Reason, "404") || !strings.Contains(dl.Reason, "REDACTED") {
		t.Errorf("reason %q: want the refusal, redacted", dl.Reason)
	}
	for what, text := range map[string]string{"dead letter": string(letters[0].Data), "logs": logs.String()} {
		if strings.Contains(text, token) {
			t.Errorf("%s carries the URL token: %s", what, text)
		}
	}
}

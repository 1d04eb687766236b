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
	"github.com/reinception/rein/streams/bus"
)

// End to end on JetStream: a webhook receiver that fails its first two
// attempts still gets each escalation and report exactly once in effect,
// with a valid signature, and the JSONL audit file holds every event.
func TestStageDeliversToWebhookAndJSONL(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	secret := []byte("s3cret-0123456789abcdef0123456789ab")
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
	st, err := escalation.New(escalation.Config{Sinks: escalation.SinksConfig{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{URL: recv.URL, SecretEnv: "REIN_TEST_WEBHOOK_SECRET", Attempts: 5, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}},
		{JSONL: &escalation.JSONLConfig{Path: audit, SyncInterval: time.Millisecond}},
	}}}, escalation.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()

	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
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
		streams.Out{Stream: bus.StreamOutcomes, Subject: bus.EscalationSubject("acme", "e1"), Event: &esc},
		streams.Out{Stream: bus.StreamOutcomes, Subject: bus.ReportSubject("acme", "e1"), Event: &rep}); err != nil {
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

// Two webhook sinks each receive every event (they were tracked by their
// kind's name, so the second was taken as done once the first had it).
func TestEverySinkInstanceGetsEveryEvent(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	t.Setenv("REIN_TEST_WEBHOOK_SECRET", "0123456789abcdef0123456789abcdef")
	var mu sync.Mutex
	got := map[string]map[string]int{} // receiver → event id → deliveries
	receiver := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var ev struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(body, &ev)
			mu.Lock()
			if got[name] == nil {
				got[name] = map[string]int{}
			}
			got[name][ev.ID]++
			mu.Unlock()
			w.WriteHeader(http.StatusOK)
		}))
	}
	a, b := receiver("a"), receiver("b")
	defer a.Close()
	defer b.Close()
	reg := prometheus.NewRegistry()
	st, err := escalation.New(escalation.Config{Sinks: escalation.SinksConfig{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{URL: a.URL, SecretEnv: "REIN_TEST_WEBHOOK_SECRET"}},
		{Webhook: &escalation.WebhookConfig{Name: "crm", URL: b.URL, SecretEnv: "REIN_TEST_WEBHOOK_SECRET"}},
	}}}, escalation.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: reg}})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	for turn := 1; turn <= 3; turn++ {
		meta := schemas.Meta{Tenant: "acme", Conversation: "two", Turn: turn}
		ev, err := schemas.NewEvent(schemas.TypeReport, schemas.EventID("report", "acme", "two", turn), "", meta,
			schemas.Report{Turn: turn, Report: "which booking?", ErrorType: "anaphora"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pub.Publish(context.Background(), bus.StreamOutcomes, bus.ReportSubject("acme", "two"), &ev); err != nil {
			t.Fatal(err)
		}
	}
	rtest.CheckFor(t, 20*time.Second, "both receivers have all three events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["a"]) == 3 && len(got["b"]) == 3
	})
	// Each instance is counted under its own name, both under kind webhook.
	m := escalation.NewMetrics(reg) // the collectors the stage registered
	rtest.CheckFor(t, 20*time.Second, "rein_sink_deliveries_total by instance and kind", func() bool {
		return promtestutil.ToFloat64(m.SinkDeliveries.WithLabelValues("webhook", escalation.KindWebhook, escalation.OutcomeDelivered)) == 3 &&
			promtestutil.ToFloat64(m.SinkDeliveries.WithLabelValues("crm", escalation.KindWebhook, escalation.OutcomeDelivered)) == 3
	})
}

// A webhook refusing an escalation dead-letters it with a reason that names
// the instance and the refusal but not the token in the webhook URL's query string nor the
// static Authorization header the receiver echoes; no log line of the
// stage carries them either.
func TestStageDeadLetterRedactsWebhookCredentials(t *testing.T) {
	const (
		token = "SECRET-token-9f8e7d"
		auth  = "SECRET-auth-4c3b2a"
	)
	h := rtest.StartJetStream(t, "")
	t.Setenv("REIN_TEST_WEBHOOK_SECRET", "redact-0123456789abcdef0123456789abcdef")
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such hook "+r.URL.RequestURI()+" for "+r.Header.Get("Authorization"), http.StatusNotFound)
	}))
	defer recv.Close()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st, err := escalation.New(escalation.Config{Sinks: escalation.SinksConfig{Sinks: []escalation.SinkConfig{
		{Webhook: &escalation.WebhookConfig{Name: "cc", URL: recv.URL + "/hook?token=" + token, SecretEnv: "REIN_TEST_WEBHOOK_SECRET",
			Header: map[string]string{"Authorization": "Bearer " + auth}}},
	}}}, escalation.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	rtest.Run(t, "stage", st.Run)
	esc, err := schemas.NewEvent(schemas.TypeEscalation, schemas.EventID("escalation", "acme", "dl", 1), "",
		schemas.Meta{Tenant: "acme", Conversation: "dl", Turn: 1},
		schemas.Escalation{Turn: 1, Summary: "wants a hotel", ErrorType: "unsupported_domain", Reason: schemas.ReasonTransfer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamOutcomes, bus.EscalationSubject("acme", "dl"), &esc); err != nil {
		t.Fatal(err)
	}
	var letter []byte
	rtest.CheckFor(t, 20*time.Second, "the refused escalation dead-lettered", func() bool {
		err := streams.ReadStream(context.Background(), h.JS, bus.StreamDLQ, streams.ReadOptions{}, func(r streams.Raw) error {
			letter = r.Data
			return nil
		})
		return err == nil && letter != nil
	})
	var dl schemas.DeadLetter
	if err := json.Unmarshal(letter, &dl); err != nil {
		t.Fatalf("dead letter %s: %v", letter, err)
	}
	if !strings.Contains(dl.Reason, "webhook cc:") || !strings.Contains(dl.Reason, "404") || !strings.Contains(dl.Reason, "REDACTED") {
		t.Errorf("reason %q: want the instance and its refusal, redacted", dl.Reason)
	}
	for what, text := range map[string]string{"dead letter": string(letter), "logs": logs.String()} {
		for _, secret := range []string{token, auth} {
			if strings.Contains(text, secret) {
				t.Errorf("%s carries %q: %s", what, secret, text)
			}
		}
	}
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

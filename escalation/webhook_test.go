package escalation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/schemas"
)

// receiver is a user's webhook endpoint: it verifies the signature, fails
// the first failFirst requests with failStatus, and accepts each
// idempotency key once.
type receiver struct {
	t          *testing.T
	secret     []byte
	failFirst  int
	failStatus int
	onRequest  func()

	mu        sync.Mutex
	requests  int
	keys      []string
	modes     []string
	accepted  []cloudevents.Event
	dupes     int
	badSigned int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.onRequest != nil {
		r.onRequest()
	}
	r.requests++
	if err := VerifySignature(r.secret, req.Header.Get(SignatureHeader), body, time.Now(), DefaultSignatureWindow); err != nil {
		r.badSigned++
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	key := req.Header.Get(IdempotencyKeyHeader)
	r.keys = append(r.keys, key)
	if r.requests <= r.failFirst {
		w.WriteHeader(r.failStatus)
		return
	}
	mode := ModeBinary
	if strings.HasPrefix(req.Header.Get("Content-Type"), "application/cloudevents+json") {
		mode = ModeStructured
	}
	r.modes = append(r.modes, mode)
	ev, err := binding.ToEvent(req.Context(), cehttp.NewMessage(req.Header, io.NopCloser(bytes.NewReader(body))))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if ev.ID() != key {
		http.Error(w, "idempotency key "+key+" is not the event id "+ev.ID(), http.StatusBadRequest)
		return
	}
	for _, a := range r.accepted {
		if a.ID() == key {
			r.dupes++
			w.WriteHeader(http.StatusOK)
			return
		}
	}
	r.accepted = append(r.accepted, *ev)
	w.WriteHeader(http.StatusAccepted)
}

func newWebhookForTest(t *testing.T, url, mode string, attempts int, m *Metrics) *Webhook {
	t.Helper()
	w, err := NewWebhook(WebhookConfig{
		URL: url, Mode: mode, Secret: []byte(testSecret), Attempts: attempts,
		BackoffBase: time.Millisecond, BackoffMax: 4 * time.Millisecond, Timeout: 5 * time.Second,
	}, m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func TestWebhookModes(t *testing.T) {
	for _, mode := range []string{ModeStructured, ModeBinary} {
		t.Run(mode, func(t *testing.T) {
			rcv := &receiver{t: t, secret: []byte(testSecret)}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			m, _ := newTestMetrics(t)
			w := newWebhookForTest(t, srv.URL, mode, 3, m)
			sent := []cloudevents.Event{escalationEvent(t, "acme", "c1", 2), reportEvent(t, "acme", "c2", 1)}
			for _, ev := range sent {
				if err := w.Deliver(testCtx(t), ev); err != nil {
					t.Fatalf("deliver %s: %v", ev.ID(), err)
				}
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if len(rcv.accepted) != len(sent) {
				t.Fatalf("accepted %d events, want %d", len(rcv.accepted), len(sent))
			}
			for i, got := range rcv.accepted {
				want := sent[i]
				if rcv.modes[i] != mode {
					t.Errorf("event %d arrived in %s mode, want %s", i, rcv.modes[i], mode)
				}
				if got.ID() != want.ID() || got.Type() != want.Type() || got.Subject() != want.Subject() {
					t.Errorf("event %d: got %s/%s/%s, want %s/%s/%s", i, got.ID(), got.Type(), got.Subject(), want.ID(), want.Type(), want.Subject())
				}
				meta, err := schemas.MetaOf(&got)
				if err != nil || meta.Tenant != "acme" {
					t.Errorf("event %d: meta %+v, err %v", i, meta, err)
				}
				if !jsonEqual(t, got.Data(), want.Data()) {
					t.Errorf("event %d data: got %s, want %s", i, got.Data(), want.Data())
				}
			}
			if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindWebhook, KindWebhook, OutcomeDelivered)); got != 2 {
				t.Errorf("delivered counter = %v, want 2", got)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func TestWebhookRetries(t *testing.T) {
	tests := []struct {
		name          string
		attempts      int
		failFirst     int
		failStatus    int
		wantErr       bool
		wantRequests  int
		wantAccepted  int
		wantRetry     float64
		wantFailed    float64
		wantDelivered float64
	}{
		{"succeeds after two 503s", 5, 2, http.StatusServiceUnavailable, false, 3, 1, 2, 0, 1},
		{"succeeds after a 429 on the last attempt", 2, 1, http.StatusTooManyRequests, false, 2, 1, 1, 0, 1},
		{"dead letter after the last attempt", 3, 100, http.StatusInternalServerError, true, 3, 0, 2, 1, 0},
		{"single attempt", 1, 100, http.StatusBadGateway, true, 1, 0, 0, 1, 0},
		{"permanent 400 is not retried", 5, 100, http.StatusBadRequest, true, 1, 0, 0, 1, 0},
		{"permanent 410 is not retried", 5, 100, http.StatusGone, true, 1, 0, 0, 1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rcv := &receiver{t: t, secret: []byte(testSecret), failFirst: tc.failFirst, failStatus: tc.failStatus}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			m, _ := newTestMetrics(t)
			w := newWebhookForTest(t, srv.URL, ModeStructured, tc.attempts, m)
			ev := escalationEvent(t, "acme", "c1", 3)
			err := w.Deliver(testCtx(t), ev)
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrDeliveryFailed) {
				t.Fatalf("error %v does not wrap ErrDeliveryFailed", err)
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			if rcv.requests != tc.wantRequests {
				t.Errorf("receiver saw %d requests, want %d", rcv.requests, tc.wantRequests)
			}
			if rcv.badSigned != 0 {
				t.Errorf("%d requests had a bad signature", rcv.badSigned)
			}
			if len(rcv.accepted) != tc.wantAccepted {
				t.Errorf("accepted %d, want %d", len(rcv.accepted), tc.wantAccepted)
			}
			for _, k := range rcv.keys {
				if k != ev.ID() {
					t.Errorf("idempotency key %q, want the event id %q", k, ev.ID())
				}
			}
			for outcome, want := range map[string]float64{OutcomeRetry: tc.wantRetry, OutcomeFailed: tc.wantFailed, OutcomeDelivered: tc.wantDelivered} {
				if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindWebhook, KindWebhook, outcome)); got != want {
					t.Errorf("rein_sink_deliveries_total{outcome=%q} = %v, want %v", outcome, got, want)
				}
			}
			if n := testutil.CollectAndCount(m.SinkSeconds); n != 1 {
				t.Errorf("delivery histogram has %d series, want 1", n)
			}
		})
	}
}

// A redelivered event (same id) reaches the receiver again with the same
// idempotency key, so the receiver keeps exactly one.
func TestWebhookRedeliveryIsIdempotent(t *testing.T) {
	rcv := &receiver{t: t, secret: []byte(testSecret), failFirst: 1, failStatus: http.StatusServiceUnavailable}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w := newWebhookForTest(t, srv.URL, ModeBinary, 3, nil)
	ev := escalationEvent(t, "acme", "c9", 4)
	for range 3 {
		if err := w.Deliver(testCtx(t), ev); err != nil {
			t.Fatal(err)
		}
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.accepted) != 1 || rcv.accepted[0].ID() != ev.ID() || rcv.dupes != 2 {
		t.Fatalf("accepted %d (dupes %d), want exactly one %s", len(rcv.accepted), rcv.dupes, ev.ID())
	}
}

// Cancelling the context while waiting to retry stops at once with the
// context's error, not a dead letter: the event stays pending upstream.
func TestWebhookCancelDuringBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(testCtx(t))
	rcv := &receiver{t: t, secret: []byte(testSecret), failFirst: 100, failStatus: http.StatusServiceUnavailable, onRequest: cancel}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w, err := NewWebhook(WebhookConfig{URL: srv.URL, Secret: []byte(testSecret), Attempts: 5, BackoffBase: time.Hour, BackoffMax: time.Hour}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Deliver(ctx, escalationEvent(t, "acme", "c1", 1))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("err = %v, want context.Canceled and not ErrDeliveryFailed", err)
	}
}

func TestWebhookInvalidEventIsDeadLettered(t *testing.T) {
	rcv := &receiver{t: t, secret: []byte(testSecret)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	w := newWebhookForTest(t, srv.URL, ModeStructured, 3, nil)
	ev := cloudevents.NewEvent() // no id, source or type
	if err := w.Deliver(testCtx(t), ev); !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("err = %v, want ErrDeliveryFailed", err)
	}
	if rcv.requests != 0 {
		t.Fatalf("invalid event was sent")
	}
}

func TestWebhookBackoff(t *testing.T) {
	w, err := NewWebhook(WebhookConfig{URL: "http://127.0.0.1:1/", Secret: []byte(testSecret), BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond, Jitter: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{10, 20, 40, 50, 50}
	for i, d := range want {
		if got := w.backoff(i + 1); got != d*time.Millisecond {
			t.Errorf("backoff(%d) = %s, want %s", i+1, got, d*time.Millisecond)
		}
	}
	wj, _ := NewWebhook(WebhookConfig{URL: "http://127.0.0.1:1/", Secret: []byte(testSecret), BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second, Jitter: 0.5}, nil, nil)
	for range 50 {
		if got := wj.backoff(2); got < 200*time.Millisecond || got >= 300*time.Millisecond {
			t.Fatalf("jittered backoff(2) = %s, want in [200ms,300ms)", got)
		}
	}
}

func TestWebhookConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  WebhookConfig
	}{
		{"relative url", WebhookConfig{URL: "/hook", Secret: []byte(testSecret)}},
		{"ftp url", WebhookConfig{URL: "ftp://h/x", Secret: []byte(testSecret)}},
		{"no secret", WebhookConfig{URL: "http://h/x"}},
		{"one-byte secret", WebhookConfig{URL: "http://h/x", Secret: []byte("k")}},
		{"31-byte secret", WebhookConfig{URL: "http://h/x", Secret: []byte(testSecret[:31])}},
		{"bad mode", WebhookConfig{URL: "http://h/x", Secret: []byte(testSecret), Mode: "batch"}},
		{"negative attempts", WebhookConfig{URL: "http://h/x", Secret: []byte(testSecret), Attempts: -1}},
		{"max below base", WebhookConfig{URL: "http://h/x", Secret: []byte(testSecret), BackoffBase: time.Second, BackoffMax: time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewWebhook(tc.cfg, nil, nil); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
		})
	}
}

// A 3xx is never followed: the delivery fails at once with a clear reason,
// the redirect's target is never hit and so never sees the Authorization
// header.
func TestWebhookDoesNotFollowRedirects(t *testing.T) {
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			var targetHits atomic.Int32
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				targetHits.Add(1)
			}))
			defer target.Close()
			var origin atomic.Int32
			redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				origin.Add(1)
				http.Redirect(w, r, target.URL+"/collect", status)
			}))
			defer redirector.Close()
			m, _ := newTestMetrics(t)
			w, err := NewWebhook(WebhookConfig{URL: redirector.URL, Secret: []byte(testSecret), Attempts: 3,
				BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
				Headers: map[string]string{"Authorization": "Bearer static-credential-123"}}, m, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "c1", 1))
			if !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), "redirects are not followed") {
				t.Fatalf("err = %v, want ErrDeliveryFailed naming the refused redirect", err)
			}
			if n := targetHits.Load(); n != 0 {
				t.Fatalf("redirect target hit %d times", n)
			}
			if n := origin.Load(); n != 1 {
				t.Errorf("origin hit %d times, want 1 (a redirect is permanent, not retried)", n)
			}
			if got := testutil.ToFloat64(m.SinkDeliveries.WithLabelValues(KindWebhook, KindWebhook, OutcomeFailed)); got != 1 {
				t.Errorf("failed = %v", got)
			}
		})
	}
}

// A receiver's response is read with a bound: past MaxResponseBytes the
// attempt fails with a clear error instead of reading on.
func TestWebhookBoundsResponseBody(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				_, _ = io.WriteString(w, big)
			}))
			defer srv.Close()
			w, err := NewWebhook(WebhookConfig{URL: srv.URL, Secret: []byte(testSecret), Attempts: 2,
				BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, MaxResponseBytes: 1 << 10}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "c1", 1))
			if !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), "max_response_bytes") {
				t.Fatalf("err = %v, want ErrDeliveryFailed naming max_response_bytes", err)
			}
			if strings.Contains(err.Error(), big[:2048]) {
				t.Errorf("error carries the oversized body")
			}
		})
	}
	// Within the bound, a refusal's body still reaches the error.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "tenant unknown", http.StatusBadRequest)
	}))
	defer srv.Close()
	w, err := NewWebhook(WebhookConfig{URL: srv.URL, Secret: []byte(testSecret), MaxResponseBytes: 1 << 10}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Deliver(testCtx(t), escalationEvent(t, "acme", "c1", 1)); !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), "tenant unknown") {
		t.Fatalf("err = %v", err)
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Credentials in the URL's query string, in static headers and the signing
// secret never reach errors or logs, even when the receiver echoes them
// or the connection fails with the full URL in its error.
func TestWebhookRedactsCredentials(t *testing.T) {
	const (
		token = "QUERYSECRET-4711"
		auth  = "AUTHSECRET-0815"
	)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied "+r.URL.String()+" "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	defer echo.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused: net/http quotes the whole URL
	for _, base := range []string{echo.URL, deadURL} {
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		w, err := NewWebhook(WebhookConfig{URL: base + "/hook?token=" + token + "&tenant=acme", Secret: []byte(testSecret),
			Attempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
			Headers: map[string]string{"Authorization": "Bearer " + auth}}, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "c1", 1))
		if !errors.Is(err, ErrDeliveryFailed) {
			t.Fatalf("err = %v", err)
		}
		for what, text := range map[string]string{"error": err.Error(), "log": logs.String()} {
			for _, secret := range []string{token, auth, testSecret} {
				if strings.Contains(text, secret) {
					t.Errorf("%s for %s carries a secret: %s", what, base, text)
				}
			}
			if !strings.Contains(text, redacted) {
				t.Errorf("%s for %s shows no redaction: %s", what, base, text)
			}
		}
	}
	// A configuration error does not print the query either.
	_, err := NewWebhook(WebhookConfig{URL: "ftp://h/x?token=" + token, Secret: []byte(testSecret)}, nil, nil)
	if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), token) {
		t.Errorf("config error %v", err)
	}
}

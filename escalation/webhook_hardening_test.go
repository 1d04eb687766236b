package escalation

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A receiver answering with a redirect is not followed: the signed body
// and the static Authorization header never reach the other host, and the
// delivery fails for good.
func TestWebhookRedirectIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer other.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	w, err := NewWebhook(WebhookConfig{URL: redirecting.URL, Secret: []byte("0123456789abcdef0123456789abcdef"), Attempts: 3,
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, Header: map[string]string{"Authorization": "Bearer crm-key"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "r1", 1))
	if !errors.Is(err, ErrDeliveryFailed) {
		t.Fatalf("delivery to a redirecting receiver: %v, want a final failure", err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Fatalf("the redirect target received %d requests", n)
	}
}

// A signing secret of a few bytes is refused where sinks are configured.
func TestShortWebhookSecretIsRefused(t *testing.T) {
	cfg := SinkConfig{Type: SinkWebhook, URL: "http://127.0.0.1:1/hook", SecretEnv: "S"}
	if _, err := cfg.secret(func(string) string { return "x" }); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("1-byte secret: %v", err)
	}
	if _, err := cfg.secret(func(string) string { return strings.Repeat("k", 32) }); err != nil {
		t.Fatalf("32-byte secret: %v", err)
	}
}

// A token in the webhook URL's query string appears neither in the logs
// nor in the error that becomes the dead letter's reason.
func TestWebhookQuerySecretIsRedacted(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	var logs bytes.Buffer
	w, err := NewWebhook(WebhookConfig{URL: "http://127.0.0.1:1/hook?token=" + token + "&x=1", Secret: []byte("0123456789abcdef0123456789abcdef"),
		Attempts: 1, Timeout: time.Second}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "r2", 1))
	if err == nil {
		t.Fatal("delivery to a closed port succeeded")
	}
	if strings.Contains(err.Error(), token) || strings.Contains(logs.String(), token) {
		t.Fatalf("the query token leaked:\nerr: %v\nlogs: %s", err, logs.String())
	}
	if !strings.Contains(err.Error(), "REDACTED") && !strings.Contains(logs.String(), "REDACTED") {
		t.Logf("note: the failure named no URL (err %v)", err)
	}
}

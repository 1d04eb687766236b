package escalation

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
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
	if !strings.Contains(err.Error(), "307 Temporary Redirect; redirects are not followed") {
		t.Errorf("the failure does not say why: %v", err)
	}
	if strings.Contains(err.Error(), "after 3 attempt") {
		t.Errorf("a redirect was retried: %v", err)
	}
}

// A signing secret of a few bytes is refused where sinks are configured.
func TestShortWebhookSecretIsRefused(t *testing.T) {
	cfg := WebhookConfig{URL: "http://127.0.0.1:1/hook", SecretEnv: "S"}
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

// countingTransport counts the response body bytes read through it.
type countingTransport struct {
	next http.RoundTripper
	read *atomic.Int64
}

func (c countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, read: c.read}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	read *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// A receiver answering with an endless body (accepting or refusing the
// event): the webhook reads one byte past max_response_bytes (default
// 4 MiB), no more, and the delivery fails naming the bound and without the
// body in its reason.
func TestWebhookHugeResponseIsRefusedWithBoundedMemory(t *testing.T) {
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	for _, status := range []int{http.StatusOK, http.StatusBadRequest} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(status)
				for sent := 0; sent < 1<<30; sent += len(chunk) { // 1 GiB unless the client hangs up
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			var read atomic.Int64
			w, err := NewWebhook(WebhookConfig{URL: srv.URL, Secret: []byte("0123456789abcdef0123456789abcdef"), Attempts: 1,
				HTTPClient: &http.Client{Transport: countingTransport{next: http.DefaultTransport, read: &read}}}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "big", 1))
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), ErrResponseTooLarge.Error()) {
				t.Fatalf("err = %v, want a final failure naming max_response_bytes", err)
			}
			if strings.Contains(err.Error(), string(chunk[:256])) {
				t.Errorf("the reason carries the body: %.300s", err)
			}
			if n := read.Load(); n > DefaultWebhookMaxResponseBytes+1 {
				t.Errorf("read %d bytes of the answer; the bound is %d", n, DefaultWebhookMaxResponseBytes)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("the delivery allocated %d MiB; it should stop near the 4 MiB bound", grew>>20)
			}
		})
	}
	// Within the bound, a refusal's answer still reaches the reason, and the
	// attempt's error is ErrResponseTooLarge past it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "tenant unknown", http.StatusBadRequest)
	}))
	defer srv.Close()
	for bound, want := range map[int64]string{1 << 10: "tenant unknown", 8: "max_response_bytes"} {
		w, err := NewWebhook(WebhookConfig{URL: srv.URL, Secret: []byte("0123456789abcdef0123456789abcdef"), Attempts: 1, MaxResponseBytes: bound}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		ev := escalationEvent(t, "acme", "small", 1)
		if err := w.Deliver(testCtx(t), ev); !errors.Is(err, ErrDeliveryFailed) || !strings.Contains(err.Error(), want) {
			t.Errorf("bound %d: err = %v, want it to mention %q", bound, err, want)
		}
		if err := w.attempt(testCtx(t), ev); (bound == 8) != errors.Is(err, ErrResponseTooLarge) {
			t.Errorf("bound %d: attempt err = %v", bound, err)
		}
	}
}

// syncBuffer is a log destination safe for concurrent writers.
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

// Credentials in the URL (query values, password), in static headers and
// the signing secret reach neither errors nor logs, whether the receiver
// echoes them or the connection fails with the whole URL in its error.
func TestWebhookCredentialsAreRedacted(t *testing.T) {
	const (
		token    = "QUERYSECRET-4711"
		auth     = "AUTHSECRET-0815"
		password = "PASSWORD-2342"
		secret   = "SIGNING-0123456789abcdef0123456789"
	)
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "denied "+r.URL.String()+" "+r.Header.Get("Authorization")+" "+r.Header.Get("X-Api-Key"), http.StatusForbidden)
	}))
	defer echo.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // connection refused: net/http quotes the whole URL
	for _, base := range []string{echo.URL, deadURL} {
		var logs syncBuffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		u := strings.Replace(base, "://", "://rein:"+password+"@", 1) + "/hook?token=" + token + "&tenant=acme"
		w, err := NewWebhook(WebhookConfig{URL: u, Secret: []byte(secret), Attempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
			Header: map[string]string{"Authorization": "Bearer " + auth, "X-Api-Key": auth + "-2"}}, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		err = w.Deliver(testCtx(t), escalationEvent(t, "acme", "cred", 1))
		if !errors.Is(err, ErrDeliveryFailed) {
			t.Fatalf("err = %v", err)
		}
		for what, text := range map[string]string{"error": err.Error(), "log": logs.String()} {
			for _, c := range []string{token, auth, password, secret} {
				if strings.Contains(text, c) {
					t.Errorf("%s for %s carries %q: %s", what, base, c, text)
				}
			}
			if !strings.Contains(text, "REDACTED") {
				t.Errorf("%s for %s shows no redaction: %s", what, base, text)
			}
		}
	}
	// A configuration error does not print them either.
	_, err := NewWebhook(WebhookConfig{URL: "ftp://rein:" + password + "@h/x?token=" + token, Secret: []byte(secret)}, nil, nil)
	if !errors.Is(err, ErrInvalidConfig) || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), password) {
		t.Errorf("config error %v", err)
	}
}

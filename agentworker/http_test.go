package agentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinception/rein/agentworker"
)

func TestHTTPBackend(t *testing.T) {
	call := agentworker.ToolCall{Tenant: tenant, Conversation: "h1", Turn: 2, Step: 3, Name: "cancel_reservation",
		Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}
	cases := []struct {
		name    string
		answers []func(w http.ResponseWriter) // one per attempt
		want    string
		toolErr bool
		backend bool
	}{
		{"output", []func(http.ResponseWriter){ok(`{"output":"done"}`)}, "done", false, false},
		{"plain body", []func(http.ResponseWriter){ok(`cancelled`)}, "cancelled", false, false},
		{"tool error", []func(http.ResponseWriter){ok(`{"error":"Error: reservation not found"}`)}, "Error: reservation not found", true, false},
		{"4xx is a tool error", []func(http.ResponseWriter){status(404, "no such tool")}, "Error: HTTP 404: no such tool", true, false},
		{"5xx retried", []func(http.ResponseWriter){status(502, "bad gateway"), status(503, "busy"), ok(`{"output":"done"}`)}, "done", false, false},
		{"429 retried", []func(http.ResponseWriter){status(429, "slow down"), ok(`{"output":"done"}`)}, "done", false, false},
		{"5xx exhausted", []func(http.ResponseWriter){status(500, "x"), status(500, "x"), status(500, "x")}, "", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var keys []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n := len(keys)
				keys = append(keys, r.Header.Get(agentworker.HeaderIdempotencyKey))
				mu.Unlock()
				var got agentworker.ToolCall
				if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&got) != nil || got.Name != call.Name || got.Step != 3 ||
					r.Header.Get("Authorization") != "Bearer t" {
					http.Error(w, "bad request", 400)
					return
				}
				tc.answers[min(n, len(tc.answers)-1)](w)
			}))
			defer srv.Close()
			b, err := agentworker.NewHTTPBackend(agentworker.HTTPConfig{URL: srv.URL, Backoff: time.Millisecond,
				Headers: map[string]string{"Authorization": "Bearer t"}})
			if err != nil {
				t.Fatal(err)
			}
			conv, _ := b.Open(nil)
			out, err := conv.Call(context.Background(), call)
			switch {
			case tc.backend:
				if !errors.Is(err, agentworker.ErrBackend) {
					t.Errorf("err = %v, want a backend failure", err)
				}
			case tc.toolErr:
				if !errors.Is(err, agentworker.ErrTool) || err.Error() != tc.want {
					t.Errorf("err = %v, want tool error %q", err, tc.want)
				}
			default:
				if err != nil || out != tc.want {
					t.Errorf("Call = %q, %v; want %q", out, err, tc.want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keys) != min(len(tc.answers), 3) {
				t.Errorf("attempts = %d", len(keys))
			}
			for _, k := range keys {
				if k != "acme.h1/2/3" {
					t.Errorf("Idempotency-Key = %q, want acme.h1/2/3 on every attempt", k)
				}
			}
		})
	}
}

func TestHTTPBackendTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	b, err := agentworker.NewHTTPBackend(agentworker.HTTPConfig{URL: srv.URL, Timeout: 50 * time.Millisecond, Attempts: 2, Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// The caller's deadline must not be what ends the call: the backend's
	// own timeout does, long before.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = b.Call(ctx, agentworker.ToolCall{Tenant: tenant, Conversation: "h", Turn: 1, Step: 1, Name: "x"})
	if !errors.Is(err, agentworker.ErrBackend) || ctx.Err() != nil {
		t.Errorf("err = %v (caller's context: %v), want the backend's timeout", err, ctx.Err())
	}
}

func TestHTTPBackendConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tools.json")
	if err := os.WriteFile(good, []byte(`[{"type":"function","function":{"name":"cancel_reservation","description":"d","parameters":{"type":"object"}}},{"name":"lookup"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"description":"no name"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		cfg   agentworker.HTTPConfig
		tools int
		ok    bool
	}{
		{"tools file", agentworker.HTTPConfig{URL: "http://127.0.0.1:1/tools", ToolsFile: good}, 2, true},
		{"bad tools file", agentworker.HTTPConfig{URL: "http://127.0.0.1:1/tools", ToolsFile: bad}, 0, false},
		{"missing tools file", agentworker.HTTPConfig{URL: "http://127.0.0.1:1/tools", ToolsFile: filepath.Join(dir, "none.json")}, 0, false},
		{"not http", agentworker.HTTPConfig{URL: "ftp://x"}, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := agentworker.NewHTTPBackend(tc.cfg)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v", err)
			}
			if err == nil && len(b.Tools()) != tc.tools {
				t.Errorf("tools = %d", len(b.Tools()))
			}
		})
	}
}

func ok(body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { _, _ = w.Write([]byte(body)) }
}

func status(code int, body string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { http.Error(w, body, code) }
}

// A tool backend answering without end is read up to the bound only, and
// the agent gets an explicit error instead of a silently cut answer.
func TestHTTPBackendHugeAnswerIsBounded(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for r.Context().Err() == nil && sent.Load() < 64<<20 {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	b, err := agentworker.NewHTTPBackend(agentworker.HTTPConfig{URL: srv.URL, Attempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Call(context.Background(), agentworker.ToolCall{Tenant: tenant, Conversation: "h", Turn: 1, Step: 1, Name: "x"})
	if err == nil || !strings.Contains(err.Error(), "exceeds") || out != "" {
		t.Fatalf("huge answer: %q, %v; want an error saying it exceeds the bound", clipTest(out), err)
	}
}

func clipTest(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

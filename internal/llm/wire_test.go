package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeServer is a local HTTP server that answers with a programmed sequence
// of replies (the last one repeats) and keeps every request it saw.
type fakeServer struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	replies []reply
	seen    []seenRequest
}

type reply struct {
	status  int
	headers map[string]string
	body    string
	hang    bool // block until the client gives up
}

type seenRequest struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

func newFakeServer(t testing.TB, replies ...reply) *fakeServer {
	f := &fakeServer{t: t, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	n := len(f.seen)
	f.seen = append(f.seen, seenRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Raw: raw})
	rp := f.replies[min(n, len(f.replies)-1)]
	f.mu.Unlock()
	if rp.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rp.headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	status := rp.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, rp.body)
}

func (f *fakeServer) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// fastRetries keeps backoff short so retry tests take milliseconds.
func fastRetries(cfg Config) Config {
	cfg.RetryBaseDelay = time.Millisecond
	cfg.RetryMaxDelay = 5 * time.Millisecond
	return cfg
}

func newClient(t testing.TB, cfg Config) (Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	c, err := New(cfg, reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, reg
}

// dig walks decoded JSON by object keys and array indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

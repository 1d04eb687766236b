package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultHTTP is the default address of rein's HTTP port.
const DefaultHTTP = "127.0.0.1:8080"

// Server is rein's HTTP port: /metrics, /healthz, /readyz, plus whatever
// handlers other parts mount (ingress, dashboard).
type Server struct {
	mux   *http.ServeMux
	ready atomic.Bool
	why   atomic.Value // string: why not ready
	log   *slog.Logger

	mu     sync.Mutex
	srv    *http.Server
	ln     net.Listener
	checks []check // degradations /readyz reports
}

// check is a named degradation probe: nil when all is well.
type check struct {
	name string
	fn   func() error
}

// NewServer builds the HTTP server around the process's registry.
func NewServer(reg *prometheus.Registry, log *slog.Logger) *Server {
	s := &Server{mux: http.NewServeMux(), log: log}
	s.why.Store("starting")
	s.mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.ready.Load() {
			if degraded := s.degraded(); len(degraded) > 0 {
				// Still ready: a replica whose model is down records every
				// turn and hands it to a human; taking it out of service
				// would refuse turns instead. The body, the
				// rein_model_available gauge and its alert say so.
				writeJSON(w, http.StatusOK, map[string]any{"status": "degraded", "degraded": degraded})
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": s.why.Load().(string)})
	})
	return s
}

// AddCheck registers a degradation probe that /readyz reports (status
// "degraded", with the probe's error under its name) while it fails.
func (s *Server) AddCheck(name string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, check{name, fn})
}

func (s *Server) degraded() map[string]string {
	s.mu.Lock()
	checks := append([]check(nil), s.checks...)
	s.mu.Unlock()
	out := map[string]string{}
	for _, c := range checks {
		if err := c.fn(); err != nil {
			out[c.name] = err.Error()
		}
	}
	return out
}

// Handle mounts a handler on the server's mux (pattern as net/http).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// SetReady marks the process ready (NATS connected, streams provisioned)
// or not, with the reason shown by /readyz.
func (s *Server) SetReady(ok bool, reason string) {
	s.why.Store(reason)
	s.ready.Store(ok)
}

// Listen binds addr (use port 0 for a random port) and serves in the
// background until Shutdown.
func (s *Server) Listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	s.mu.Lock()
	s.srv, s.ln = srv, ln
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server", "err", err)
		}
	}()
	return nil
}

// Addr is the bound address, once listening.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops the server gracefully.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Shutdown(ctx)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteJSON writes v as a JSON response with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) { writeJSON(w, code, v) }

package telemetry

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/net/netutil"
)

// DefaultHTTP is the default address of rein's HTTP port.
const DefaultHTTP = "127.0.0.1:8080"

// Limits bound what the HTTP port gives a client; zero fields take the
// defaults. A slow or idle connection is closed, at most MaxConns are
// served at once (the others wait to be accepted), and a request whose
// Host is not one of AllowedHosts is answered 421 (DNS rebinding: a page
// elsewhere must not reach a loopback port through a name of its own).
type Limits struct {
	ReadHeaderTimeout time.Duration // default 5s
	ReadTimeout       time.Duration // the whole request, default 30s
	WriteTimeout      time.Duration // default 60s
	IdleTimeout       time.Duration // default 2m
	MaxHeaderBytes    int           // default 64 KiB
	MaxConns          int           // default 1024
	// AllowedHosts are the names (without port) a request's Host may carry,
	// besides localhost, 127.0.0.1 and ::1 and the listen address's host.
	// Listening on a wildcard address (0.0.0.0, ::) with none given
	// accepts any Host.
	AllowedHosts []string
}

func (l Limits) withDefaults() Limits {
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, 5*time.Second)
	l.ReadTimeout = cmp.Or(l.ReadTimeout, 30*time.Second)
	l.WriteTimeout = cmp.Or(l.WriteTimeout, 60*time.Second)
	l.IdleTimeout = cmp.Or(l.IdleTimeout, 2*time.Minute)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, 64<<10)
	l.MaxConns = cmp.Or(l.MaxConns, 1024)
	return l
}

// Server is rein's HTTP port: /metrics, /healthz, /readyz, plus whatever
// handlers other parts mount (ingress, dashboard).
type Server struct {
	// Limits apply from Listen on.
	Limits Limits
	// Access guards the dashboard and /metrics (see Access), from Listen on.
	Access Access
	// TLSCert and TLSKey, when set, make Listen serve HTTPS only.
	TLSCert, TLSKey string

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
	name     string
	fn       func() error
	required bool // failing makes the process not ready
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
			if failing := s.failing(true); len(failing) > 0 {
				// What the process needs to do its work at all (NATS, the
				// streams' leaders) is down: take it out of service.
				writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "reason": "requirement failing", "failing": failing})
				return
			}
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
	s.checks = append(s.checks, check{name: name, fn: fn})
}

// AddRequirement registers a probe of something the process cannot work
// without (NATS reachable, the streams it writes having a leader): while
// it fails /readyz answers 503 "not ready", naming it, so that a load
// balancer or Kubernetes sends the work elsewhere.
func (s *Server) AddRequirement(name string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks = append(s.checks, check{name: name, fn: fn, required: true})
}

func (s *Server) degraded() map[string]string { return s.failing(false) }

// failing runs the requirement probes (required) or the degradation ones.
func (s *Server) failing(required bool) map[string]string {
	s.mu.Lock()
	checks := append([]check(nil), s.checks...)
	s.mu.Unlock()
	out := map[string]string{}
	for _, c := range checks {
		if c.required != required {
			continue
		}
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
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("http: the TLS certificate and key go together")
	}
	var tlsConf *tls.Config
	if s.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.TLSCert, s.TLSKey)
		if err != nil {
			return fmt.Errorf("http TLS: %w", err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	if s.Access.Tokens != nil && !s.Access.OpenReads {
		s.mux.HandleFunc("/login", s.Access.login(tlsConf != nil))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", addr, err)
	}
	l := s.Limits.withDefaults()
	srv := &http.Server{Handler: hostCheck(s.Access.guard(s.mux), addr, l.AllowedHosts), ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout: l.ReadTimeout, WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: l.MaxHeaderBytes}
	ln = netutil.LimitListener(ln, l.MaxConns)
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
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

// hostCheck answers 421 to a request whose Host is not allowed: loopback
// names, the listen host and the configured ones; a wildcard listen
// address without configured names allows any.
func hostCheck(next http.Handler, addr string, extra []string) http.Handler {
	listen, _, _ := net.SplitHostPort(addr)
	if (listen == "" || listen == "0.0.0.0" || listen == "::") && len(extra) == 0 {
		return next
	}
	allowed := map[string]bool{"localhost": true, "127.0.0.1": true, "::1": true}
	if listen != "" {
		allowed[strings.ToLower(listen)] = true
	}
	for _, h := range extra {
		allowed[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if !allowed[host] {
			writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "host " + r.Host + " is not served here (see --http-allowed-hosts)"})
			return
		}
		next.ServeHTTP(w, r)
	})
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

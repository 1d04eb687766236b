package telemetry

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultHTTP is the default address of rein's HTTP port.
const DefaultHTTP = "127.0.0.1:8080"

// HTTPConfig configures rein's HTTP port.
type HTTPConfig struct {
	// Addr is host:port (port 0 for a random one).
	Addr string
	// Tokens authenticate callers (Authorization: Bearer). Nil runs the
	// port without authentication, which only a loopback Addr or Insecure
	// allows.
	Tokens *Tokens
	// Insecure allows a non-loopback Addr without Tokens.
	Insecure bool
	// TLSCert and TLSKey serve HTTPS.
	TLSCert, TLSKey string
	// AllowedHosts are the names a request's Host may carry besides IP
	// literals, "localhost" and Addr's host (a name never sent by a
	// browser tricked by DNS rebinding); "*" allows any. Others get 421.
	AllowedHosts []string
	// MetricsOpen serves /metrics without a token (set by default on a
	// loopback Addr; see Defaults).
	MetricsOpen bool
	// Timeouts (defaults 5s, 30s, 60s, 120s) and the number of open
	// connections (default 1024; more wait in the backlog).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	MaxConns                                                  int
	// MaxHeaderBytes bounds request headers (default 64 KiB).
	MaxHeaderBytes int
}

// IsLoopbackAddr reports whether host:port listens on loopback only.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *HTTPConfig) defaults() {
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = 5 * time.Second
	}
	if c.ReadTimeout == 0 {
		c.ReadTimeout = 30 * time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 60 * time.Second
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 120 * time.Second
	}
	if c.MaxConns == 0 {
		c.MaxConns = 1024
	}
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = 64 << 10
	}
}

// Validate checks the configuration: a non-loopback port without tokens is
// refused unless Insecure.
func (c HTTPConfig) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("%w: http address %q: %w", ErrConfig, c.Addr, err)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("%w: HTTP TLS certificate and key go together", ErrConfig)
	}
	if c.Tokens == nil && !c.Insecure && !IsLoopbackAddr(c.Addr) {
		return fmt.Errorf("%w: %s (give a tokens file, or allow it explicitly with --insecure)", ErrInsecureHTTP, c.Addr)
	}
	if c.MaxConns < 0 {
		return fmt.Errorf("%w: max connections %d", ErrConfig, c.MaxConns)
	}
	return nil
}

// Server is rein's HTTP port: /metrics, /healthz, /readyz, plus whatever
// handlers other parts mount (ingress, dashboard), each behind its role.
type Server struct {
	mux   *http.ServeMux
	ready atomic.Bool
	why   atomic.Value // string: why not ready
	log   *slog.Logger

	// cfg is set once by Serve, before the first request.
	cfg   HTTPConfig
	hosts map[string]bool

	mu  sync.Mutex
	srv *http.Server
	ln  net.Listener
}

// NewServer builds the HTTP server around the process's registry.
func NewServer(reg *prometheus.Registry, log *slog.Logger) *Server {
	s := &Server{mux: http.NewServeMux(), log: log}
	s.why.Store("starting")
	s.HandleRole("GET /metrics", RoleMetrics, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true}))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if s.ready.Load() {
			writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
			return
		}
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "reason": s.why.Load().(string)})
	})
	return s
}

// Handle mounts a dashboard handler (pattern as net/http): with tokens it
// needs the dashboard role, and the tenant of a {tenant} path, or every
// tenant for pages that span tenants (static /assets/ excepted).
func (s *Server) Handle(pattern string, h http.Handler) { s.HandleRole(pattern, RoleDashboard, h) }

// HandleRole mounts a handler that, with tokens, needs role. Ingress
// handlers check the tenant themselves (PrincipalFrom), once they know it.
func (s *Server) HandleRole(pattern string, role Role, h http.Handler) {
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Tokens == nil || (role == RoleMetrics && s.cfg.MetricsOpen) {
			h.ServeHTTP(w, r)
			return
		}
		p, ok := PrincipalFrom(r.Context())
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a bearer token is required"})
			return
		}
		if !p.Has(role) {
			writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("token %s lacks the %s role", p.Name, role)})
			return
		}
		if role == RoleDashboard {
			t := r.PathValue("tenant")
			if (t != "" && !p.AllowsTenant(t)) || (t == "" && !p.AllowsAllTenants() && !strings.HasPrefix(r.URL.Path, "/assets/")) {
				writeJSON(w, http.StatusForbidden, map[string]string{"error": fmt.Sprintf("token %s is not bound to this tenant", p.Name)})
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
}

// SetReady marks the process ready (NATS connected, streams provisioned)
// or not, with the reason shown by /readyz.
func (s *Server) SetReady(ok bool, reason string) {
	s.why.Store(reason)
	s.ready.Store(ok)
}

// Listen serves addr on loopback defaults (no tokens; see Serve).
func (s *Server) Listen(addr string) error {
	return s.Serve(HTTPConfig{Addr: addr, MetricsOpen: true})
}

// Serve binds c.Addr and serves in the background until Shutdown.
func (s *Server) Serve(c HTTPConfig) error {
	c.defaults()
	if err := c.Validate(); err != nil {
		return err
	}
	var tlsCfg *tls.Config
	if c.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
		if err != nil {
			return fmt.Errorf("%w: HTTP TLS: %w", ErrConfig, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	s.cfg = c
	s.hosts = map[string]bool{"localhost": true}
	if h, _, _ := net.SplitHostPort(c.Addr); h != "" {
		s.hosts[strings.ToLower(h)] = true
	}
	for _, h := range c.AllowedHosts {
		s.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return fmt.Errorf("http listen %s: %w", c.Addr, err)
	}
	ln = newLimitListener(ln, c.MaxConns)
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	srv := &http.Server{
		Handler:           s.guard(s.mux),
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.WriteTimeout,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
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

// guard checks the Host header (421 for a name not served here) and
// authenticates a bearer token (401 for one that is not known); routes
// check roles (HandleRole).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host) {
			writeJSON(w, http.StatusMisdirectedRequest, map[string]string{"error": "this server does not answer for host " + strconv.Quote(r.Host)})
			return
		}
		if s.cfg.Tokens != nil {
			if h := r.Header.Get("Authorization"); h != "" {
				tok, ok := bearer(h)
				p := s.cfg.Tokens.Lookup(tok)
				if !ok || p == nil {
					w.Header().Set("WWW-Authenticate", `Bearer realm="rein", error="invalid_token"`)
					writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unknown bearer token"})
					return
				}
				r = r.WithContext(WithPrincipal(r.Context(), p))
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) hostAllowed(hostport string) bool {
	if s.hosts["*"] {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if host == "" {
		return false
	}
	// An IP literal cannot be a rebound name.
	if net.ParseIP(host) != nil {
		return true
	}
	return s.hosts[host]
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

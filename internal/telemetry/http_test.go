package telemetry_test

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
)

const (
	opTok     = "operator-token-0123456789"
	acmeTok   = "acme-ingress-dash-token-0123"
	metricTok = "metrics-scrape-token-0123456"
)

func tokens(t *testing.T) *telemetry.Tokens {
	t.Helper()
	sum := sha256.Sum256([]byte(acmeTok))
	ts, err := telemetry.NewTokens([]telemetry.TokenSpec{
		{Name: "ops", Token: opTok, Tenants: []string{telemetry.AllTenants}, Roles: []telemetry.Role{telemetry.RoleOperator}},
		{Name: "acme", SHA256: hex.EncodeToString(sum[:]), Tenants: []string{"acme"}, Roles: []telemetry.Role{telemetry.RoleIngress, telemetry.RoleDashboard}},
		{Name: "prom", Token: metricTok, Roles: []telemetry.Role{telemetry.RoleMetrics}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// serve starts a server with tokens and a dashboard-like route per tenant.
func serve(t *testing.T, c telemetry.HTTPConfig) *telemetry.Server {
	t.Helper()
	s := telemetry.NewServer(telemetry.NewRegistry(), slog.New(slog.DiscardHandler))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	s.Handle("GET /{$}", ok)
	s.Handle("GET /conversations/{tenant}/{conv}", ok)
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	if err := s.Serve(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(t.Context()) })
	return s
}

func do(t *testing.T, s *telemetry.Server, host, path, token string) int {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, "http://"+s.Addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		r.Host = host
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestHTTPAuthRolesAndTenants(t *testing.T) {
	s := serve(t, telemetry.HTTPConfig{Tokens: tokens(t)})
	cases := []struct {
		name, path, token string
		want              int
	}{
		{"metrics without a token", "/metrics", "", 401},
		{"metrics with an unknown token", "/metrics", "nope-nope-nope-nope", 401},
		{"metrics with the metrics role", "/metrics", metricTok, 200},
		{"metrics with an ingress/dashboard token", "/metrics", acmeTok, 403},
		{"metrics as operator", "/metrics", opTok, 200},
		{"probes stay open", "/healthz", "", 200},
		{"dashboard without a token", "/", "", 401},
		{"overview spans tenants: not for acme's token", "/", acmeTok, 403},
		{"overview as operator", "/", opTok, 200},
		{"acme's conversation with acme's token", "/conversations/acme/c1", acmeTok, 200},
		{"another tenant's conversation", "/conversations/globex/c1", acmeTok, 403},
		{"dashboard with the metrics role only", "/conversations/acme/c1", metricTok, 403},
	}
	for _, c := range cases {
		if got := do(t, s, "", c.path, c.token); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// TestHTTPMetricsOpenOnLoopback: MetricsOpen leaves /metrics to anyone who
// reaches the port; the dashboard still needs its token.
func TestHTTPMetricsOpenOnLoopback(t *testing.T) {
	s := serve(t, telemetry.HTTPConfig{Tokens: tokens(t), MetricsOpen: true})
	if got := do(t, s, "", "/metrics", ""); got != 200 {
		t.Errorf("open metrics: %d", got)
	}
	if got := do(t, s, "", "/", ""); got != 401 {
		t.Errorf("dashboard: %d, want 401", got)
	}
}

func TestHTTPHostCheck(t *testing.T) {
	s := serve(t, telemetry.HTTPConfig{AllowedHosts: []string{"rein.internal"}})
	_, port, _ := net.SplitHostPort(s.Addr())
	cases := []struct {
		host string
		want int
	}{
		{"", 200}, // 127.0.0.1:port
		{"localhost:" + port, 200},
		{"[::1]:" + port, 200},
		{"rein.internal:" + port, 200},
		{"REIN.internal", 200},
		{"attacker.example:" + port, 421}, // a rebound name
		{"attacker.example", 421},
	}
	for _, c := range cases {
		if got := do(t, s, c.host, "/healthz", ""); got != c.want {
			t.Errorf("Host %q: %d, want %d", c.host, got, c.want)
		}
	}
}

// TestHTTPSlowlorisClosedByHeaderTimeout: a client that sends half a request
// and stalls is disconnected once the header timeout passes.
func TestHTTPSlowlorisClosedByHeaderTimeout(t *testing.T) {
	const bound = 300 * time.Millisecond
	s := serve(t, telemetry.HTTPConfig{ReadHeaderTimeout: bound})
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: "); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * bound))
	_, err = io.ReadAll(conn) // returns when the server closes the connection
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the half-sent request was still open after %s", 10*bound)
	}
	if took := time.Since(start); took > 5*bound {
		t.Errorf("closed after %s, want about %s", took, bound)
	}
}

// TestHTTPMaxConns: past MaxConns, a new connection waits until one closes.
func TestHTTPMaxConns(t *testing.T) {
	s := serve(t, telemetry.HTTPConfig{MaxConns: 1})
	hold, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(hold, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1)
	if _, err := hold.Read(buf); err != nil { // served: it holds the one slot (keep-alive)
		t.Fatal(err)
	}
	second, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if _, err := io.WriteString(second, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := second.Read(buf); n != 0 {
		t.Fatal("a second connection was served while the first held the only slot")
	}
	hold.Close()
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(second)
	if err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Fatalf("after the first closed: %q, %v", b, err)
	}
}

func TestHTTPRefusesOpenAddressWithoutAuth(t *testing.T) {
	cases := []struct {
		name string
		c    telemetry.HTTPConfig
		want error
	}{
		{"loopback without tokens", telemetry.HTTPConfig{Addr: "127.0.0.1:8080"}, nil},
		{"all interfaces without tokens", telemetry.HTTPConfig{Addr: "0.0.0.0:8080"}, telemetry.ErrInsecureHTTP},
		{"lan address without tokens", telemetry.HTTPConfig{Addr: "10.0.0.5:8080"}, telemetry.ErrInsecureHTTP},
		{"all interfaces, insecure", telemetry.HTTPConfig{Addr: "0.0.0.0:8080", Insecure: true}, nil},
		{"all interfaces with tokens", telemetry.HTTPConfig{Addr: "0.0.0.0:8080", Tokens: &telemetry.Tokens{}}, nil},
		{"cert without key", telemetry.HTTPConfig{Addr: "127.0.0.1:8080", TLSCert: "c.pem"}, telemetry.ErrConfig},
	}
	for _, c := range cases {
		err := c.c.Validate()
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	s := telemetry.NewServer(telemetry.NewRegistry(), slog.New(slog.DiscardHandler))
	if err := s.Serve(telemetry.HTTPConfig{Addr: "0.0.0.0:0"}); !errors.Is(err, telemetry.ErrInsecureHTTP) {
		t.Errorf("Serve on 0.0.0.0 without tokens: %v", err)
	}
}

func TestHTTPTLS(t *testing.T) {
	cert, key := rtest.SelfSignedCert(t, t.TempDir())
	s := serve(t, telemetry.HTTPConfig{TLSCert: cert, TLSKey: key})
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + s.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("https: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("https healthz: %d", resp.StatusCode)
	}
	if resp, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil && resp.StatusCode == 200 {
		resp.Body.Close()
		t.Error("plain HTTP was served on the TLS port")
	}
}

func TestTokensFileAndLocalToken(t *testing.T) {
	dir := t.TempDir()
	path, ts, err := telemetry.EnsureLocalToken(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v, want mode 0600", path, st.Mode().Perm(), err)
	}
	b, _ := os.ReadFile(path)
	p := ts.Lookup(strings.TrimSpace(string(b)))
	if !p.Has(telemetry.RoleDashboard) || !p.AllowsTenant("any") {
		t.Errorf("local token principal %+v", p)
	}
	if _, again, err := telemetry.EnsureLocalToken(dir); err != nil || again.Lookup(strings.TrimSpace(string(b))) == nil {
		t.Errorf("a second start did not keep the token: %v", err)
	}
	file := filepath.Join(dir, "tokens.yaml")
	sum := sha256.Sum256([]byte(acmeTok))
	if err := os.WriteFile(file, []byte("tokens:\n  - name: acme\n    sha256: "+hex.EncodeToString(sum[:])+"\n    tenants: [acme]\n    roles: [ingress]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ft, err := telemetry.LoadTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	if p := ft.Lookup(acmeTok); p == nil || !p.Has(telemetry.RoleIngress) || p.Has(telemetry.RoleDashboard) || p.AllowsTenant("globex") {
		t.Errorf("acme principal %+v", p)
	}
	for name, body := range map[string]string{
		"unknown role":  "tokens:\n  - token: aaaaaaaaaaaaaaaaaaaa\n    tenants: [a]\n    roles: [root]\n",
		"short token":   "tokens:\n  - token: short\n    tenants: [a]\n    roles: [ingress]\n",
		"no tenants":    "tokens:\n  - token: aaaaaaaaaaaaaaaaaaaa\n    roles: [ingress]\n",
		"unknown field": "tokens:\n  - token: aaaaaaaaaaaaaaaaaaaa\n    tenants: [a]\n    roles: [ingress]\n    admin: true\n",
	} {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := telemetry.LoadTokens(file); !errors.Is(err, telemetry.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}

func TestTenantLimiter(t *testing.T) {
	l := telemetry.NewTenantLimiter(1, 3, 2)
	for i := range 3 {
		if ok, _ := l.Allow("acme"); !ok {
			t.Fatalf("request %d within the burst refused", i+1)
		}
	}
	ok, after := l.Allow("acme")
	if ok || after <= 0 || after > time.Second {
		t.Errorf("over the burst: ok %v, retry after %s", ok, after)
	}
	if ok, _ := l.Allow("globex"); !ok {
		t.Error("another tenant was limited by acme's burst")
	}
	// Two buckets held, neither full: a third tenant waits.
	if ok, _ := l.Allow("initech"); ok {
		t.Error("a third tenant got a bucket beyond the bound")
	}
}

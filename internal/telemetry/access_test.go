package telemetry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
)

const (
	ingressTok   = "ingress-token-0123456789"
	dashTok      = "dashboard-token-0123456789"
	metricsTok   = "metrics-token-0123456789"
	acmeOnlyDash = "acme-dashboard-0123456789"
)

func accessServer(t *testing.T, open bool, cert, key string) *telemetry.Server {
	t.Helper()
	tokens, err := telemetry.NewTokens([]telemetry.Token{
		{Token: ingressTok, Tenants: []string{"acme"}},
		{Token: dashTok, Tenants: []string{"*"}, Roles: []string{telemetry.RoleDashboard}},
		{Token: metricsTok, Tenants: []string{"*"}, Roles: []string{telemetry.RoleMetrics}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := telemetry.NewServer(prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	s.Access = telemetry.Access{Tokens: tokens, OpenReads: open}
	s.TLSCert, s.TLSKey = cert, key
	s.Handle("GET /{$}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "overview") }))
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	return s
}

func get(t *testing.T, c *http.Client, u, token, accept string) *http.Response {
	t.Helper()
	r, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		r.Header.Set("Accept", accept)
	}
	resp, err := c.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// The dashboard and /metrics each need a token with their own role; the
// probes stay open; a browser signs in once at /login and carries an
// HttpOnly cookie; with OpenReads (a loopback port) both are open.
func TestHTTPRolesGuardDashboardAndMetrics(t *testing.T) {
	s := accessServer(t, false, "", "")
	base := "http://" + s.Addr()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	cases := []struct {
		path, token string
		code        int
	}{
		{"/healthz", "", 200},
		{"/metrics", "", 401},
		{"/metrics", ingressTok, 403},
		{"/metrics", dashTok, 403},
		{"/metrics", metricsTok, 200},
		{"/", "", 401},
		{"/", metricsTok, 403},
		{"/", "not-a-token-at-all-000", 401},
		{"/", dashTok, 200},
	}
	for _, c := range cases {
		if got := get(t, noRedirect, base+c.path, c.token, "").StatusCode; got != c.code {
			t.Errorf("GET %s with %q: %d, want %d", c.path, c.token, got, c.code)
		}
	}
	if resp := get(t, noRedirect, base+"/", "", "text/html"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("a browser without a token: %d → %q, want 303 → /login", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Sign in: a metrics token is refused, a dashboard token sets the cookie.
	if resp, err := noRedirect.PostForm(base+"/login", url.Values{"token": {metricsTok}}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("login with a metrics token: %v %v", resp, err)
	}
	resp, err := noRedirect.PostForm(base+"/login", url.Values{"token": {dashTok}})
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %v %v", resp, err)
	}
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("login cookie %+v, want HttpOnly SameSite=Strict", cookie)
	}
	r, _ := http.NewRequest(http.MethodGet, base+"/", nil)
	r.AddCookie(cookie)
	if resp, err := http.DefaultClient.Do(r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("the dashboard with the cookie: %v %v", resp, err)
	}

	open := accessServer(t, true, "", "")
	for _, p := range []string{"/metrics", "/"} {
		if got := get(t, http.DefaultClient, "http://"+open.Addr()+p, "", "").StatusCode; got != 200 {
			t.Errorf("open reads: GET %s = %d, want 200", p, got)
		}
	}
}

// A dashboard token bound to some tenants is refused (the dashboard shows
// every tenant), and so is an unknown role.
func TestTokensConfigRefusals(t *testing.T) {
	for name, tok := range map[string]telemetry.Token{
		"dashboard for one tenant": {Token: acmeOnlyDash, Tenants: []string{"acme"}, Roles: []string{telemetry.RoleDashboard}},
		"unknown role":             {Token: acmeOnlyDash, Tenants: []string{"*"}, Roles: []string{"admin"}},
		"short token":              {Token: "short", Tenants: []string{"*"}},
		"no tenant":                {Token: acmeOnlyDash},
	} {
		if _, err := telemetry.NewTokens([]telemetry.Token{tok}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// With a certificate the port speaks HTTPS only.
func TestHTTPPortTLS(t *testing.T) {
	cert, key := rtest.SelfSignedCert(t, t.TempDir())
	s := accessServer(t, true, cert, key)
	if resp, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil && resp.StatusCode == 200 {
		t.Fatal("plain HTTP answered on the TLS port")
	}
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := c.Get("https://" + s.Addr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HTTPS: %v %v", resp, err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(resp.Proto, "HTTP/") {
		t.Errorf("proto %s", resp.Proto)
	}
}

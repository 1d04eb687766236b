package telemetry

import (
	"html"
	"net/http"
	"strings"
)

// Access is who may read the HTTP port. With Tokens set, the dashboard
// needs a token with the dashboard role and /metrics one with the metrics
// role, unless OpenReads leaves both open (rein does so on a loopback
// port, where only this machine reaches them and the Host check keeps
// rebinding pages out). /healthz and /readyz are always open; POST
// /v1/turns and /v1/feedback check their own tokens (the tenant is in the
// event).
type Access struct {
	Tokens    *Tokens
	OpenReads bool
}

// routeRole is the role a request needs: "" when the route is open or
// checks its own (probes, ingress, the login page).
func routeRole(r *http.Request) string {
	switch p := r.URL.Path; {
	case p == "/healthz" || p == "/readyz" || p == "/login" || strings.HasPrefix(p, "/v1/turns") || strings.HasPrefix(p, "/v1/feedback"):
		return ""
	case p == "/metrics":
		return RoleMetrics
	default:
		return RoleDashboard
	}
}

// guard applies a to every request before the mux.
func (a Access) guard(next http.Handler) http.Handler {
	if a.Tokens == nil || a.OpenReads {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		role := routeRole(r)
		if role == "" {
			next.ServeHTTP(w, r)
			return
		}
		if code, why := a.Tokens.Authorize(r, role, ""); code != 0 {
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
				if role == RoleDashboard && strings.Contains(r.Header.Get("Accept"), "text/html") {
					http.Redirect(w, r, "/login", http.StatusSeeOther)
					return
				}
			}
			writeJSON(w, code, map[string]string{"error": why})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// login serves GET /login (a form) and POST /login (token → an HttpOnly,
// SameSite=Strict cookie, for browsers, which cannot send a bearer header
// on their own). A token without the dashboard role is refused.
func (a Access) login(tls bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, 4096)
			tok := strings.TrimSpace(r.PostFormValue("token"))
			probe := &http.Request{Header: http.Header{"Authorization": {"Bearer " + tok}}}
			if code, why := a.Tokens.Authorize(probe, RoleDashboard, ""); code != 0 {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.WriteHeader(code)
				_, _ = w.Write([]byte(loginPage(why)))
				return
			}
			http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: tok, Path: "/", HttpOnly: true, Secure: tls, SameSite: http.SameSiteStrictMode})
			http.Redirect(w, r, "/", http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(loginPage("")))
	}
}

func loginPage(msg string) string {
	if msg != "" {
		msg = "<p>" + html.EscapeString(msg) + "</p>"
	}
	return `<!doctype html><meta charset="utf-8"><title>rein · sign in</title>` + msg +
		`<form method="post" action="/login"><label>Token with the dashboard role <input type="password" name="token" autocomplete="off"></label> <button>Sign in</button></form>`
}

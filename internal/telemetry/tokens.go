package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Roles of the HTTP port's bearer tokens.
const (
	// RoleIngress posts turns (POST /v1/turns) for the token's tenants.
	RoleIngress = "ingress"
	// RoleDashboard reads the dashboard, which shows every tenant's
	// conversations: it needs tenants ["*"].
	RoleDashboard = "dashboard"
	// RoleMetrics scrapes /metrics.
	RoleMetrics = "metrics"
	// RoleOperator sees the dashboard's free text (what users and the
	// agent said, tool results), which it redacts for everyone else: it
	// needs tenants ["*"].
	RoleOperator = "operator"
)

// Roles lists every role.
var Roles = []string{RoleIngress, RoleDashboard, RoleMetrics, RoleOperator}

// ErrTokens marks an invalid tokens configuration.
var ErrTokens = errors.New("invalid HTTP tokens")

// Token is one bearer token of the HTTP port: the secret itself (Token) or
// its hex SHA-256 (SHA256, so that a tokens file need not hold secrets),
// the tenants it speaks for ("*": every tenant) and its roles (default
// [ingress]).
type Token struct {
	Token   string   `json:"token,omitempty" yaml:"token,omitempty"`
	SHA256  string   `json:"sha256,omitempty" yaml:"sha256,omitempty"`
	Tenants []string `json:"tenants" yaml:"tenants"`
	Roles   []string `json:"roles,omitempty" yaml:"roles,omitempty"`
}

// Tokens is the HTTP port's table of bearer tokens; the zero value and nil
// grant nothing.
type Tokens struct {
	grants map[string]grant // hex SHA-256 → grant
}

type grant struct{ tenants, roles []string }

// NewTokens checks and indexes tokens: each has a token of at least 16
// characters or a 64-digit sha256 (not both), a tenant, and known roles; a
// dashboard token needs every tenant.
func NewTokens(tokens []Token) (*Tokens, error) {
	t := &Tokens{grants: map[string]grant{}}
	for i, tok := range tokens {
		digest := strings.ToLower(strings.TrimSpace(tok.SHA256))
		switch {
		case tok.Token != "" && digest != "":
			return nil, fmt.Errorf("%w: token %d has both token and sha256", ErrTokens, i+1)
		case tok.Token != "":
			if len(tok.Token) < 16 {
				return nil, fmt.Errorf("%w: token %d is shorter than 16 characters", ErrTokens, i+1)
			}
			sum := sha256.Sum256([]byte(tok.Token))
			digest = hex.EncodeToString(sum[:])
		case len(digest) != 64:
			return nil, fmt.Errorf("%w: token %d needs a token or a 64-digit hex sha256", ErrTokens, i+1)
		}
		if len(tok.Tenants) == 0 {
			return nil, fmt.Errorf("%w: token %d names no tenant (\"*\" for every tenant)", ErrTokens, i+1)
		}
		roles := tok.Roles
		if len(roles) == 0 {
			roles = []string{RoleIngress}
		}
		for _, r := range roles {
			if !slices.Contains(Roles, r) {
				return nil, fmt.Errorf("%w: token %d has unknown role %q (roles: %s)", ErrTokens, i+1, r, strings.Join(Roles, ", "))
			}
		}
		for _, wide := range []string{RoleDashboard, RoleOperator} {
			if slices.Contains(roles, wide) && !slices.Contains(tok.Tenants, "*") {
				return nil, fmt.Errorf("%w: token %d has the %s role, which shows every tenant: give it tenants [\"*\"]", ErrTokens, i+1, wide)
			}
		}
		t.grants[digest] = grant{tenants: slices.Clone(tok.Tenants), roles: slices.Clone(roles)}
	}
	return t, nil
}

// Len is the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.grants)
}

// Authorize checks r's bearer token (the Authorization header, or the
// rein_token cookie a browser got from /login) for role and, when tenant
// is not "", for that tenant. It returns 0 when allowed, else 401 (no or an
// unknown token) or 403 (a token without the role or the tenant) and why.
func (t *Tokens) Authorize(r *http.Request, role, tenant string) (int, string) {
	token := bearer(r)
	if token == "" {
		return http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer <token>)"
	}
	if t == nil {
		return http.StatusUnauthorized, "unknown token"
	}
	sum := sha256.Sum256([]byte(token))
	g, known := t.grants[hex.EncodeToString(sum[:])]
	switch {
	case !known:
		return http.StatusUnauthorized, "unknown token"
	case !slices.Contains(g.roles, role):
		return http.StatusForbidden, "this token does not have the " + role + " role"
	case tenant != "" && !slices.Contains(g.tenants, "*") && !slices.Contains(g.tenants, tenant):
		return http.StatusForbidden, "this token may not post for tenant " + tenant
	}
	return 0, ""
}

// tokenCookie carries a browser's token after /login.
const tokenCookie = "rein_token"

func bearer(r *http.Request) string {
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(tok)
	}
	if c, err := r.Cookie(tokenCookie); err == nil {
		return strings.TrimSpace(c.Value)
	}
	return ""
}

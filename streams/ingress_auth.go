package streams

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// IngressToken is one bearer token of POST /v1/turns and the tenants it
// may post for ("*": every tenant). Token is the secret itself; SHA256
// its hex digest instead, so that a token file need not hold secrets.
type IngressToken struct {
	Token   string   `json:"token,omitempty" yaml:"token,omitempty"`
	SHA256  string   `json:"sha256,omitempty" yaml:"sha256,omitempty"`
	Tenants []string `json:"tenants" yaml:"tenants"`
}

// SetTokens makes the ingress require a bearer token bound to the event's
// tenant: no or an unknown token → 401, a token for other tenants → 403.
// An empty list removes the requirement.
func (in *Ingress) SetTokens(tokens []IngressToken) error {
	grants := map[string][]string{}
	for i, t := range tokens {
		digest := strings.ToLower(strings.TrimSpace(t.SHA256))
		switch {
		case t.Token != "" && digest != "":
			return fmt.Errorf("%w: token %d has both token and sha256", ErrConfig, i+1)
		case t.Token != "":
			if len(t.Token) < 16 {
				return fmt.Errorf("%w: token %d is shorter than 16 characters", ErrConfig, i+1)
			}
			sum := sha256.Sum256([]byte(t.Token))
			digest = hex.EncodeToString(sum[:])
		case len(digest) != 64:
			return fmt.Errorf("%w: token %d needs a token or a 64-digit hex sha256", ErrConfig, i+1)
		}
		if len(t.Tenants) == 0 {
			return fmt.Errorf("%w: token %d names no tenant (\"*\" for every tenant)", ErrConfig, i+1)
		}
		grants[digest] = t.Tenants
	}
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if len(grants) == 0 {
		grants = nil
	}
	in.grants = grants
	return nil
}

// authorize checks the request's bearer token against tenant; code 0 means
// allowed.
func (in *Ingress) authorize(r *http.Request, tenant string) (int, string) {
	in.limitMu.Lock()
	grants := in.grants
	in.limitMu.Unlock()
	if grants == nil {
		return 0, ""
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		return http.StatusUnauthorized, "a bearer token is required (Authorization: Bearer <token>)"
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	tenants, known := grants[hex.EncodeToString(sum[:])]
	switch {
	case !known:
		return http.StatusUnauthorized, "unknown token"
	case !slices.Contains(tenants, "*") && !slices.Contains(tenants, tenant):
		return http.StatusForbidden, "this token may not post for tenant " + tenant
	}
	return 0, ""
}

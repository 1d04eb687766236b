package ingress

import (
	"fmt"
	"net/http"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams"
)

// SetTokens makes the ingress require a bearer token with the ingress role
// bound to the event's tenant: no or an unknown token → 401, a token
// without the role or for other tenants → 403. Nil or empty removes the
// requirement.
func (in *Ingress) SetTokens(tokens *telemetry.Tokens) {
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if tokens.Len() == 0 {
		tokens = nil
	}
	in.tokens = tokens
}

// SetTokenList is SetTokens from a list (see telemetry.NewTokens).
func (in *Ingress) SetTokenList(list []telemetry.Token) error {
	t, err := telemetry.NewTokens(list)
	if err != nil {
		return fmt.Errorf("%w: %w", streams.ErrInvalidConfig, err)
	}
	in.SetTokens(t)
	return nil
}

// authorize checks the request's bearer token against tenant; code 0 means
// allowed.
func (in *Ingress) authorize(r *http.Request, tenant string) (int, string) {
	in.limitMu.Lock()
	tokens := in.tokens
	in.limitMu.Unlock()
	if tokens == nil {
		return 0, ""
	}
	return tokens.Authorize(r, telemetry.RoleIngress, tenant)
}

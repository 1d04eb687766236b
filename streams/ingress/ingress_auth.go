package ingress

import (
	"net/http"

	"github.com/reinception/rein/internal/telemetry"
)

// authorize checks the request's bearer token against tenant; code 0 means
// allowed.
func (in *Ingress) authorize(r *http.Request, tenant string) (int, string) {
	if in.tokens == nil {
		return 0, ""
	}
	return in.tokens.Authorize(r, telemetry.RoleIngress, tenant)
}

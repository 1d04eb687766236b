package ingress

import "errors"

// Sentinel errors of the ingress package.
var (
	// ErrTenantBusy: a tenant has as many HTTP requests in flight as it may.
	ErrTenantBusy = errors.New("tenant has too many requests in flight")
)

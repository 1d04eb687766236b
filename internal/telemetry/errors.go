package telemetry

import "errors"

// Sentinel errors of the telemetry package.
var (
	// ErrConfig marks an invalid HTTP configuration value.
	ErrConfig = errors.New("invalid configuration")
	// ErrInsecureHTTP refuses a non-loopback HTTP port without bearer
	// tokens, unless explicitly insecure.
	ErrInsecureHTTP = errors.New("refusing to serve HTTP on a non-loopback address without authentication")
)

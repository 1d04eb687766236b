package injector

import "errors"

// Sentinel errors of the injector package. Callers test them with errors.Is.
var (
	// ErrInvalidConfig is returned for an unusable configuration (NewTasks, NewSidecar).
	ErrInvalidConfig = errors.New("invalid injector config")
	// ErrBadRequest marks a sidecar request whose subject does not name a
	// valid tenant, conversation and turn.
	ErrBadRequest = errors.New("bad inception request")
)

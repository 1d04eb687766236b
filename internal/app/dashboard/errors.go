package dashboard

import "errors"

var (
	// ErrMissingDep is returned by New when a required dependency is nil.
	ErrMissingDep = errors.New("dashboard: missing dependency")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("dashboard: invalid config")
	// ErrNotFound means a conversation has no events in any stream.
	ErrNotFound = errors.New("dashboard: conversation not found")
	// ErrBadQuery is a query parameter the dashboard does not accept.
	ErrBadQuery = errors.New("dashboard: bad query")
)

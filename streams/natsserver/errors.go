package natsserver

import "errors"

// Sentinel errors of the natsserver package.
var (
	// ErrInsecureListen refuses a non-loopback listen address without TLS
	// (or, on HTTP, without authentication).
	ErrInsecureListen = errors.New("refusing to listen on a non-loopback address without TLS")
	// ErrNoAuth refuses an embedded server without users.
	ErrNoAuth = errors.New("refusing to run the embedded NATS server without authentication")
	// ErrNotReady is returned when the embedded server does not come up in time.
	ErrNotReady = errors.New("embedded NATS server not ready")
	// ErrDataDirInUse: another process holds the data directory's lock
	// (LockDataDir).
	ErrDataDirInUse = errors.New("data directory in use")
)

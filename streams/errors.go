package streams

import "errors"

// Sentinel errors of the streams package.
var (
	// ErrPermanent marks a handler error that no retry can fix: the message
	// goes to the dead-letter stream at once. Wrap with Permanent.
	ErrPermanent = errors.New("permanent failure")
	// ErrUndecodable marks a message that is not a valid rein CloudEvent.
	ErrUndecodable = errors.New("undecodable message")
	// ErrInsecureListen refuses a non-loopback listen address without TLS
	// (or, on HTTP, without authentication).
	ErrInsecureListen = errors.New("refusing to listen on a non-loopback address without TLS")
	// ErrNoAuth refuses an embedded server without users.
	ErrNoAuth = errors.New("refusing to run the embedded NATS server without authentication")
	// ErrInvalidConfig marks an invalid configuration value.
	ErrInvalidConfig = errors.New("invalid configuration")
	// ErrConflictingDuplicate: a turn offered under a number its
	// conversation already has, with other content (see PublishTurn).
	ErrConflictingDuplicate = errors.New("conflicting duplicate")
	// ErrReplicasUnavailable: the streams ask for more replicas than the
	// servers can hold (a single server, or a cluster too small or without
	// servers of the placement tags).
	ErrReplicasUnavailable = errors.New("stream replicas unavailable")
	// ErrNoLeader: a stream has no leader (its servers are down or
	// electing one), so nothing can be written to it.
	ErrNoLeader = errors.New("stream has no leader")
	// ErrNotReady is returned when the embedded server does not come up in time.
	ErrNotReady = errors.New("embedded NATS server not ready")
)

// permanentError wraps an error so that errors.Is(err, ErrPermanent) holds
// while the original stays reachable.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() []error {
	return []error{ErrPermanent, p.err}
}

// Permanent marks err as not retryable: the consume loop dead-letters the
// message instead of retrying it.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

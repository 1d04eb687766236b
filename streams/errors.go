package streams

import (
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sentinel errors of the streams package.
var (
	// ErrPermanent marks a handler error that no retry can fix: the message
	// goes to the dead-letter stream at once. Wrap with Permanent.
	ErrPermanent = errors.New("permanent failure")
	// ErrUndecodable marks a message that is not a valid rein CloudEvent.
	ErrUndecodable = errors.New("undecodable message")
	// ErrInvalidConfig marks an invalid configuration value.
	ErrInvalidConfig = errors.New("invalid configuration")
	// ErrConflictingDuplicate: a turn offered under a number its
	// conversation already has, with other content (see PublishTurn).
	ErrConflictingDuplicate = errors.New("conflicting duplicate")
	// ErrIDHijack: JetStream took a message as a duplicate of one stored
	// under its Nats-Msg-Id, but the stored message is on another subject
	// or is another event (type, tenant, conversation, turn): someone used
	// the id first. The message is not stored and must not count as stored.
	ErrIDHijack = errors.New("message id already used by another message")
	// ErrReplicasUnavailable: the streams ask for more replicas than the
	// servers can hold (a single server, or a cluster too small or without
	// servers of the placement tags).
	ErrReplicasUnavailable = errors.New("stream replicas unavailable")
	// ErrUnavailable: a publish gave up on failures that may pass (the
	// stream answered nothing, had no leader, or took nothing in time)
	// after retrying for the publisher's RetryFor. A handler that fails
	// with it failed for where its outputs go, not for what its input is:
	// the consume loop hands such an input back instead of dead-lettering
	// it, so that a turn is never ended without its outputs by an outage.
	ErrUnavailable = errors.New("stream unavailable")
	// ErrNoLeader: a stream has no leader (its servers are down or
	// electing one), so nothing can be written to it.
	ErrNoLeader = errors.New("stream has no leader")
)

// IsUnavailable tells whether err says that JetStream could not serve a
// handler, rather than that its input is wrong: a publish that gave up
// (ErrUnavailable), a stream or bucket that answered nothing or has no
// leader. No timeout counts, since a handler's model calls time out too.
func IsUnavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrNoLeader) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || (errors.As(err, &apiErr) && apiErr.Code == 503)
}

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

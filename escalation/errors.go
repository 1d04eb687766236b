package escalation

import "errors"

// Sentinel errors of the escalation package; every returned error wraps one.
var (
	// ErrDeliveryFailed means a sink gave up on an event after its last
	// attempt (or on a permanent refusal). The stage dead-letters the event.
	ErrDeliveryFailed = errors.New("sink delivery failed")
	// ErrInvalidConfig means a sink configuration is unusable.
	ErrInvalidConfig = errors.New("invalid sink configuration")
	// ErrClosed means Deliver was called on a closed sink.
	ErrClosed = errors.New("sink closed")
	// ErrResponseTooLarge means a webhook receiver answered with a body
	// longer than max_response_bytes; the attempt fails unread past it.
	ErrResponseTooLarge = errors.New("webhook response body exceeds max_response_bytes")

	// ErrSignatureMissing means the signature header is absent or empty.
	ErrSignatureMissing = errors.New("webhook signature missing")
	// ErrSignatureMalformed means the signature header cannot be parsed.
	ErrSignatureMalformed = errors.New("webhook signature malformed")
	// ErrSignatureExpired means the signed timestamp is outside the window
	// (a replay, or a clock too far ahead).
	ErrSignatureExpired = errors.New("webhook signature outside tolerance window")
	// ErrSignatureMismatch means no v1 signature matches the body.
	ErrSignatureMismatch = errors.New("webhook signature mismatch")

	// ErrNoHandoff means no handoff item was available to claim.
	ErrNoHandoff = errors.New("no handoff item to claim")
	// ErrCorruptAudit means an audit file holds a line that is not a
	// CloudEvent (other than a torn final line, which is never read).
	ErrCorruptAudit = errors.New("corrupt audit record")
)

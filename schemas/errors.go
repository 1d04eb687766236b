package schemas

import "errors"

// Sentinel errors of the schemas package; every returned error wraps one.
var (
	ErrUnknownType    = errors.New("unknown event type")
	ErrMalformedJSON  = errors.New("malformed JSON payload")
	ErrInvalidPayload = errors.New("payload does not match its schema")
	ErrBadID          = errors.New("invalid identifier")
	ErrMissingAttr    = errors.New("missing CloudEvents attribute")
	// ErrUnverified marks a task whose signature is missing or wrong
	// (see TaskKey); its text is the dead-letter reason.
	ErrUnverified = errors.New(ReasonUnverifiedTask)
)

package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Sentinel errors. Callers test them with errors.Is; every error a Client
// returns wraps at most one of the HTTP-class sentinels (ErrRateLimited,
// ErrServer, ErrRejected) or ErrTimeout.
var (
	// ErrInvalidConfig marks an invalid Config or an unusable script/cassette path.
	ErrInvalidConfig = errors.New("llm: invalid config")
	// ErrRateLimited is a 429 answer that survived every retry.
	ErrRateLimited = errors.New("llm: rate limited")
	// ErrServer is a 5xx answer (or 408/409) that survived every retry.
	ErrServer = errors.New("llm: server error")
	// ErrRejected is any other non-2xx answer (bad request, auth, not found).
	ErrRejected = errors.New("llm: request rejected")
	// ErrTimeout is a call that ran out of time (per-attempt timeout or the
	// caller's deadline). It is joined with context.DeadlineExceeded when the
	// caller's context expired.
	ErrTimeout = errors.New("llm: timeout")
	// ErrEmptyResponse is a 2xx answer with no choice/content to return.
	ErrEmptyResponse = errors.New("llm: empty response")
	// ErrCassetteMiss is a replayed request whose key is not in the cassette.
	ErrCassetteMiss = errors.New("llm: request not in cassette")
	// ErrCassette marks an unreadable or malformed cassette file.
	ErrCassette = errors.New("llm: invalid cassette")
	// ErrScript marks an invalid simulator script (bad regex, template, field).
	ErrScript = errors.New("llm: invalid script")
	// ErrNoRule is a scripted call that no rule matched and no default answers.
	ErrNoRule = errors.New("llm: no script rule matched")
	// ErrSimulated is a failure a script rule asked for (its `error:` field).
	ErrSimulated = errors.New("llm: simulated failure")
	// ErrInvalidToolList is returned by ParseToolList and LoadToolList for a
	// malformed tool catalogue.
	ErrInvalidToolList = errors.New("invalid tool list")
)

// APIError is a non-2xx HTTP answer from a provider, with what the retry
// policy needs to know. It unwraps to ErrRateLimited (429), ErrServer (5xx,
// 408, 409) or ErrRejected (anything else).
type APIError struct {
	Provider   string
	StatusCode int
	// Type and Message come from the provider's error body when present.
	Type    string
	Message string
	// RetryAfter is the server's requested wait (Retry-After-Ms or
	// Retry-After, seconds or HTTP-date); zero when absent.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	if e.Type != "" {
		return fmt.Sprintf("HTTP %d %s: %s", e.StatusCode, e.Type, msg)
	}
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, msg)
}

// Unwrap maps the status code to its sentinel.
func (e *APIError) Unwrap() error {
	switch {
	case e.StatusCode == http.StatusTooManyRequests:
		return ErrRateLimited
	case e.StatusCode >= 500, e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusConflict:
		return ErrServer
	default:
		return ErrRejected
	}
}

// retryable reports whether the retry policy may try the call again.
func (e *APIError) retryable() bool {
	return !errors.Is(e, ErrRejected)
}

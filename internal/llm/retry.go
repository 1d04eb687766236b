package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinception/rein/internal/telemetry"
)

// Attributes of a rein.model span (OpenTelemetry's generative-AI names).
var (
	attrPurpose      = attribute.Key("rein.purpose")
	attrSystem       = attribute.Key("gen_ai.system")
	attrModel        = attribute.Key("gen_ai.request.model")
	attrInputTokens  = attribute.Key("gen_ai.usage.input_tokens")
	attrOutputTokens = attribute.Key("gen_ai.usage.output_tokens")
)

// managed wraps a provider with the one retry policy and the metrics. The
// SDKs' own retries are disabled, so this is the only place a call repeats.
type managed struct {
	inner      Client
	guard      *guard        // breaker and in-flight limit around each attempt
	timeout    time.Duration // per attempt; 0 = none
	maxRetries int
	base, max  time.Duration
	series     *seriesCache
}

func newManaged(inner Client, cfg Config, m *metrics, g *guard) *managed {
	return &managed{
		inner:      inner,
		guard:      g,
		timeout:    cfg.Timeout,
		maxRetries: cfg.MaxRetries,
		base:       cfg.RetryBaseDelay,
		max:        cfg.RetryMaxDelay,
		series:     &seriesCache{m: m, provider: inner.Provider(), model: inner.Model()},
	}
}

func (c *managed) Provider() string { return c.inner.Provider() }
func (c *managed) Model() string    { return c.inner.Model() }

// Chat runs the call, retrying 429, 5xx, timeouts and connection errors with
// exponential backoff and jitter (or the server's Retry-After), never past
// ctx's deadline. Every attempt is counted and timed.
func (c *managed) Chat(ctx context.Context, req Request) (resp Response, err error) {
	ctx, span := telemetry.Tracer().Start(ctx, "rein.model", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attrPurpose.String(req.Purpose), attrSystem.String(c.inner.Provider()), attrModel.String(c.inner.Model())))
	defer func() {
		span.SetAttributes(attrInputTokens.Int(resp.Usage.InputTokens), attrOutputTokens.Int(resp.Usage.OutputTokens))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "model call failed")
		}
		span.End()
	}()
	s := c.series.get(req.Purpose)
	for attempt := 0; ; attempt++ {
		start := time.Now()
		resp, err := c.attempt(ctx, req)
		outcome, retry, wait := classify(ctx, err)
		s.observe(outcome, time.Since(start), resp.Usage)
		if err == nil {
			return resp, nil
		}
		err = c.wrap(outcome, err)
		if !retry || attempt >= c.maxRetries {
			return Response{}, err
		}
		if wait <= 0 {
			wait = c.backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return Response{}, fmt.Errorf("%w (next retry in %s would pass the deadline)", err, wait.Round(time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, fmt.Errorf("%w (gave up waiting to retry: %w)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// Available tells whether the endpoint takes calls (its circuit breaker
// is not open).
func (c *managed) Available() bool { return c.guard == nil || c.guard.Available() }

func (c *managed) attempt(ctx context.Context, req Request) (Response, error) {
	if c.guard == nil {
		return c.attemptOnce(ctx, req)
	}
	return c.guard.do(ctx, func(ctx context.Context) (Response, error) { return c.attemptOnce(ctx, req) })
}

func (c *managed) attemptOnce(ctx context.Context, req Request) (Response, error) {
	if c.timeout <= 0 {
		return c.inner.Chat(ctx, req)
	}
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := c.inner.Chat(actx, req)
	if err != nil && ctx.Err() == nil && errors.Is(actx.Err(), context.DeadlineExceeded) {
		// The per-attempt bound fired, not the caller's: say so, keep it retryable.
		err = fmt.Errorf("attempt exceeded %s: %w", c.timeout, errAttemptTimeout{err})
	}
	return resp, err
}

func (c *managed) wrap(outcome string, err error) error {
	if outcome == OutcomeTimeout && !errors.Is(err, ErrTimeout) {
		return fmt.Errorf("%s/%s: %w: %w", c.inner.Provider(), c.inner.Model(), ErrTimeout, err)
	}
	return fmt.Errorf("%s/%s: %w", c.inner.Provider(), c.inner.Model(), err)
}

// backoff is base·2^attempt capped at max, jittered into [d/2, d].
func (c *managed) backoff(attempt int) time.Duration {
	d := c.base
	for i := 0; i < attempt && d < c.max; i++ {
		d *= 2
	}
	if d > c.max {
		d = c.max
	}
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + rand.N(half+1)
}

// errAttemptTimeout marks a per-attempt timeout (the caller still has time).
type errAttemptTimeout struct{ err error }

func (e errAttemptTimeout) Error() string { return e.err.Error() }
func (e errAttemptTimeout) Unwrap() error { return e.err }

// classify maps an attempt's error to its metric outcome, whether it may be
// retried, and the server-requested wait.
func classify(ctx context.Context, err error) (outcome string, retry bool, wait time.Duration) {
	if err == nil {
		return OutcomeOK, false, 0
	}
	callerDone := ctx.Err() != nil
	var apiErr *APIError
	switch {
	case errors.Is(err, ErrUnavailable):
		return OutcomeError, false, 0 // the breaker is open: fail over at once
	case errors.As(err, &apiErr):
		outcome = OutcomeError
		if apiErr.StatusCode == http.StatusTooManyRequests {
			outcome = OutcomeRateLimited
		} else if apiErr.StatusCode == http.StatusRequestTimeout {
			outcome = OutcomeTimeout
		}
		return outcome, apiErr.retryable() && !callerDone, apiErr.RetryAfter
	case errors.As(err, new(errAttemptTimeout)):
		return OutcomeTimeout, !callerDone, 0
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrTimeout), isNetTimeout(err):
		return OutcomeTimeout, !callerDone, 0
	case errors.Is(err, context.Canceled):
		return OutcomeError, false, 0
	case isConnError(err):
		return OutcomeError, !callerDone, 0
	default:
		return OutcomeError, false, 0
	}
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isConnError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}

// parseRetryAfter reads Retry-After-Ms (milliseconds, sent by OpenAI) or
// Retry-After (delta-seconds or an HTTP-date) relative to now. It returns 0
// when neither is present or parseable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

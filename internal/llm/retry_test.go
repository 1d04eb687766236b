package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/reinception/rein/internal/telemetry"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"absent", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"HTTP-date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"HTTP-date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "7", "Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := parseRetryAfter(h, now); got != tt.want {
				t.Fatalf("parseRetryAfter = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestBackoffBounds(t *testing.T) {
	c := &managed{base: 100 * time.Millisecond, max: time.Second}
	tests := []struct {
		attempt  int
		min, max time.Duration
	}{
		{0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 500 * time.Millisecond, time.Second},
		{62, 500 * time.Millisecond, time.Second},
	}
	for _, tt := range tests {
		for i := 0; i < 200; i++ {
			if d := c.backoff(tt.attempt); d < tt.min || d > tt.max {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tt.attempt, d, tt.min, tt.max)
			}
		}
	}
}

func TestClassify(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	tests := []struct {
		name    string
		ctx     context.Context
		err     error
		outcome string
		retry   bool
		wait    time.Duration
	}{
		{"nil", live, nil, OutcomeOK, false, 0},
		{"429", live, &APIError{StatusCode: 429, RetryAfter: time.Second}, OutcomeRateLimited, true, time.Second},
		{"503", live, fmt.Errorf("x: %w", &APIError{StatusCode: 503}), OutcomeError, true, 0},
		{"408", live, &APIError{StatusCode: 408}, OutcomeTimeout, true, 0},
		{"400", live, &APIError{StatusCode: 400}, OutcomeError, false, 0},
		{"429 after caller gave up", done, &APIError{StatusCode: 429}, OutcomeRateLimited, false, 0},
		{"attempt timeout", live, errAttemptTimeout{context.DeadlineExceeded}, OutcomeTimeout, true, 0},
		{"caller deadline", done, fmt.Errorf("post: %w", context.DeadlineExceeded), OutcomeTimeout, false, 0},
		{"canceled", done, context.Canceled, OutcomeError, false, 0},
		{"connection refused", live, fmt.Errorf("dial: %w", syscall.ECONNREFUSED), OutcomeError, true, 0},
		{"unexpected EOF", live, io.ErrUnexpectedEOF, OutcomeError, true, 0},
		{"cassette miss", live, ErrCassetteMiss, OutcomeError, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome, retry, wait := classify(tt.ctx, tt.err)
			if outcome != tt.outcome || retry != tt.retry || wait != tt.wait {
				t.Fatalf("classify = %s %v %s, want %s %v %s", outcome, retry, wait, tt.outcome, tt.retry, tt.wait)
			}
		})
	}
}

func TestAPIErrorSentinels(t *testing.T) {
	tests := []struct {
		status int
		want   error
	}{{429, ErrRateLimited}, {500, ErrServer}, {529, ErrServer}, {408, ErrServer}, {409, ErrServer}, {400, ErrRejected}, {401, ErrRejected}, {404, ErrRejected}}
	for _, tt := range tests {
		if err := (&APIError{StatusCode: tt.status}); !errors.Is(err, tt.want) {
			t.Errorf("%d: errors.Is(%v) = false", tt.status, tt.want)
		}
	}
}

func TestMetricsRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m1, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if m1.requests != m2.requests || m1.tokens != m2.tokens || m1.seconds != m2.seconds {
		t.Fatal("second registration did not reuse the collectors")
	}
	m2.requests.WithLabelValues("p", "m", "agent", OutcomeOK).Inc()
	if got := testutil.ToFloat64(m1.requests.WithLabelValues("p", "m", "agent", OutcomeOK)); got != 1 {
		t.Fatalf("shared counter = %v", got)
	}
	// A different collector under the same name is a real conflict.
	clash := prometheus.NewRegistry()
	clash.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: telemetry.MModelRequests, Help: "other"}))
	if _, err := newMetrics(clash); err == nil {
		t.Fatal("conflicting registration was accepted")
	}
}

func TestPurposeLabelBounded(t *testing.T) {
	tests := map[string]string{"": "unspecified", "agent": "agent", "user_simulator": "user_simulator",
		"Conversation 123": "other", "x-judge": "x-judge", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa": "other"}
	for in, want := range tests {
		if got := purposeLabel(in); got != want {
			t.Errorf("purposeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

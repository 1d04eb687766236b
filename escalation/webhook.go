package escalation

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
)

// HTTP content modes of the webhook sink.
const (
	ModeStructured = "structured" // the whole event as application/cloudevents+json
	ModeBinary     = "binary"     // ce-* headers, data as the body
)

// Webhook defaults and bounds.
const (
	DefaultWebhookAttempts         = 5
	DefaultBackoffBase             = 500 * time.Millisecond
	DefaultBackoffMax              = 30 * time.Second
	DefaultWebhookTimeout          = 10 * time.Second
	DefaultBackoffJitter           = 0.2
	DefaultWebhookMaxResponseBytes = 4 << 20
	// MinSecretBytes is the shortest HMAC signing secret accepted: 32 bytes,
	// the size of the SHA-256 output (e.g. `openssl rand -hex 32`).
	MinSecretBytes = 32
	// maxErrorChars bounds an error message (the receiver's answer
	// included) carried into logs and dead letters.
	maxErrorChars = 1024
)

// WebhookConfig configures one webhook sink; in rein.yaml it is a
// `type: webhook` entry of `sinks:` with the fields tagged below.
type WebhookConfig struct {
	// Name labels the sink's metrics and logs; unique among the sinks
	// (default "webhook", then "webhook-2", … in configuration order).
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
	Mode string `yaml:"mode"` // ModeStructured (default) or ModeBinary
	// Exactly one source of the HMAC-SHA256 signing secret, at least
	// MinSecretBytes long once surrounding whitespace is trimmed: the
	// environment variable SecretEnv, the file SecretFile, or Secret itself
	// (Go callers).
	SecretEnv  string `yaml:"secret_env"`
	SecretFile string `yaml:"secret_file"`
	Secret     []byte `yaml:"-"`

	Attempts    int           `yaml:"attempts"`     // total attempts, first included (default 5)
	BackoffBase time.Duration `yaml:"backoff_base"` // delay before the second attempt (default 500ms)
	BackoffMax  time.Duration `yaml:"backoff_max"`  // cap of the doubling delay (default 30s)
	Jitter      float64       `yaml:"-"`            // fraction of random extra delay in [0,1) (default 0.2; negative: none)
	Timeout     time.Duration `yaml:"timeout"`      // per-attempt timeout (default 10s)
	// Headers are static request headers (e.g. Authorization). Their
	// values never appear in logs, errors or dead letters.
	Headers map[string]string `yaml:"headers"`
	// MaxResponseBytes bounds how much of a receiver's response is read
	// (default 4 MiB); a longer response fails the attempt.
	MaxResponseBytes int64 `yaml:"max_response_bytes"`

	HTTPClient *http.Client     `yaml:"-"` // optional; its Transport is wrapped, its redirect policy replaced
	Now        func() time.Time `yaml:"-"` // optional clock for signatures
}

func (c *WebhookConfig) defaults() {
	if c.Name == "" {
		c.Name = KindWebhook
	}
	if c.Mode == "" {
		c.Mode = ModeStructured
	}
	if c.Attempts == 0 {
		c.Attempts = DefaultWebhookAttempts
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultBackoffJitter
	}
	if c.Jitter < 0 {
		c.Jitter = 0
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultWebhookTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultWebhookMaxResponseBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// validate checks a defaulted configuration without reading the secret's
// environment variable or file.
func (c *WebhookConfig) validate() error {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: webhook url %q must be an absolute http(s) URL", ErrInvalidConfig, redactURL(c.URL))
	}
	if c.Mode != ModeStructured && c.Mode != ModeBinary {
		return fmt.Errorf("%w: webhook mode %q must be %q or %q", ErrInvalidConfig, c.Mode, ModeStructured, ModeBinary)
	}
	sources := 0
	for _, set := range []bool{c.SecretEnv != "", c.SecretFile != "", len(c.Secret) > 0} {
		if set {
			sources++
		}
	}
	if sources != 1 {
		return fmt.Errorf("%w: webhook needs exactly one of secret_env and secret_file", ErrInvalidConfig)
	}
	if len(c.Secret) > 0 {
		if err := checkSecret(c.Secret, "webhook secret"); err != nil {
			return err
		}
	}
	if c.Attempts < 1 {
		return fmt.Errorf("%w: webhook attempts %d must be at least 1", ErrInvalidConfig, c.Attempts)
	}
	if c.BackoffBase < 0 || c.BackoffMax < c.BackoffBase {
		return fmt.Errorf("%w: webhook backoff base %s / max %s", ErrInvalidConfig, c.BackoffBase, c.BackoffMax)
	}
	if c.Jitter >= 1 {
		return fmt.Errorf("%w: webhook jitter %g must be below 1", ErrInvalidConfig, c.Jitter)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: webhook timeout %s", ErrInvalidConfig, c.Timeout)
	}
	if c.MaxResponseBytes < 0 {
		return fmt.Errorf("%w: webhook max_response_bytes %d must not be negative", ErrInvalidConfig, c.MaxResponseBytes)
	}
	return nil
}

func checkSecret(secret []byte, what string) error {
	if len(secret) < MinSecretBytes {
		return fmt.Errorf("%w: %s is %d bytes; signing secrets must be at least %d bytes (e.g. openssl rand -hex 32)",
			ErrInvalidConfig, what, len(secret), MinSecretBytes)
	}
	return nil
}

// resolveSecret reads the signing secret from the environment or a file
// (surrounding whitespace trimmed) into c.Secret, clearing the source
// field, and checks its length.
func (c *WebhookConfig) resolveSecret(getenv func(string) string) error {
	switch {
	case c.SecretEnv != "":
		v := strings.TrimSpace(getenv(c.SecretEnv))
		if v == "" {
			return fmt.Errorf("%w: webhook secret env var %s is unset or empty", ErrInvalidConfig, c.SecretEnv)
		}
		c.Secret, c.SecretEnv = []byte(v), ""
		return checkSecret(c.Secret, "webhook secret from env var")
	case c.SecretFile != "":
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return fmt.Errorf("%w: webhook secret file: %w", ErrInvalidConfig, err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return fmt.Errorf("%w: webhook secret file %s is empty", ErrInvalidConfig, c.SecretFile)
		}
		c.Secret, c.SecretFile = []byte(v), ""
		return checkSecret(c.Secret, "webhook secret from file")
	}
	return nil
}

// Webhook delivers CloudEvents over HTTP with sdk-go's HTTP protocol,
// signed, with exponential-backoff retries. It never follows a redirect:
// a 3xx answer is a permanent delivery failure, so neither the event nor
// the static headers ever reach a host other than the configured one.
type Webhook struct {
	cfg    WebhookConfig
	client cloudevents.Client
	m      *Metrics
	log    *slog.Logger
	redact *strings.Replacer
}

// NewWebhook builds a webhook sink from cfg; cfg.Secret must be set (the
// stage's BuildSinks reads secret_env / secret_file into it). m and log may
// be nil.
func NewWebhook(cfg WebhookConfig, m *Metrics, log *slog.Logger) (*Webhook, error) {
	cfg.defaults()
	if len(cfg.Secret) == 0 {
		return nil, fmt.Errorf("%w: webhook %s: secret is empty (resolve secret_env / secret_file first)", ErrInvalidConfig, cfg.Name)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if m == nil {
		var err error
		if m, err = NewMetrics(nil); err != nil {
			return nil, err
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	hc.Transport = &transport{next: next, secret: cfg.Secret, now: cfg.Now, static: cfg.Headers, maxBody: cfg.MaxResponseBytes}
	// The transport already turns a 3xx into an error; this is the second
	// lock on the same door.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	w := &Webhook{cfg: cfg, m: m, log: log, redact: newRedactor(cfg)}
	p, err := cehttp.New(cehttp.WithTarget(cfg.URL), cehttp.WithClient(hc))
	if err != nil {
		return nil, fmt.Errorf("%w: webhook %s: protocol: %s", ErrInvalidConfig, cfg.Name, w.scrub(err))
	}
	if w.client, err = cloudevents.NewClient(p); err != nil {
		return nil, fmt.Errorf("%w: webhook %s: client: %s", ErrInvalidConfig, cfg.Name, w.scrub(err))
	}
	return w, nil
}

// Name is the sink's configured name.
func (w *Webhook) Name() string { return w.cfg.Name }

// Kind is KindWebhook.
func (w *Webhook) Kind() string { return KindWebhook }

// Close releases nothing; in-flight deliveries end with their context.
func (w *Webhook) Close() error { return nil }

// Deliver posts ev, retrying transient failures (network errors, timeouts,
// oversized responses, 408, 409, 425, 429 and 5xx) with exponential
// backoff. After the last attempt, or on a permanent refusal (a redirect,
// another 4xx, an invalid event), it returns an error wrapping
// ErrDeliveryFailed and counts outcome "failed". A cancelled ctx returns
// ctx's error (the event stays pending upstream). Returned errors and log
// lines carry no URL query values, header values or secret.
func (w *Webhook) Deliver(ctx context.Context, ev cloudevents.Event) error {
	start := time.Now()
	defer func() { w.m.observe(w.cfg.Name, KindWebhook, time.Since(start)) }()
	if err := ev.Validate(); err != nil {
		w.m.delivery(w.cfg.Name, KindWebhook, OutcomeFailed)
		return fmt.Errorf("%w: webhook %s: invalid event %q: %w", ErrDeliveryFailed, w.cfg.Name, ev.ID(), err)
	}
	for attempt := 1; ; attempt++ {
		err := w.attempt(ctx, ev)
		if err == nil {
			w.m.delivery(w.cfg.Name, KindWebhook, OutcomeDelivered)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("webhook %s: event %s: %w", w.cfg.Name, ev.ID(), context.Cause(ctx))
		}
		permanent := isPermanent(err)
		if permanent || attempt >= w.cfg.Attempts {
			w.m.delivery(w.cfg.Name, KindWebhook, OutcomeFailed)
			reason := w.scrub(err)
			w.log.LogAttrs(ctx, slog.LevelWarn, "webhook delivery failed",
				slog.String("id", ev.ID()), slog.String("type", ev.Type()),
				slog.Int("attempts", attempt), slog.Bool("permanent", permanent), slog.String("err", reason))
			// The cause is carried as redacted text, not wrapped: a
			// wrapped *url.Error would print the full URL again.
			return fmt.Errorf("%w: webhook %s: event %s after %d attempt(s): %s", ErrDeliveryFailed, w.cfg.Name, ev.ID(), attempt, reason)
		}
		w.m.delivery(w.cfg.Name, KindWebhook, OutcomeRetry)
		t := time.NewTimer(w.backoff(attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webhook %s: event %s: %w", w.cfg.Name, ev.ID(), context.Cause(ctx))
		case <-t.C:
		}
	}
}

func (w *Webhook) attempt(ctx context.Context, ev cloudevents.Event) error {
	actx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	actx = cehttp.WithCustomHeader(actx, http.Header{IdempotencyKeyHeader: []string{ev.ID()}})
	if w.cfg.Mode == ModeBinary {
		actx = binding.WithForceBinary(actx)
	} else {
		actx = binding.WithForceStructured(actx)
	}
	res := w.client.Send(actx, ev)
	if cloudevents.IsACK(res) {
		return nil
	}
	if res == nil {
		return errors.New("no result")
	}
	return res
}

// backoff is the delay after failed attempt n (1-based): base·2^(n-1),
// capped at max, plus up to Jitter of itself at random.
func (w *Webhook) backoff(n int) time.Duration {
	d := w.cfg.BackoffBase
	for i := 1; i < n && d < w.cfg.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, w.cfg.BackoffMax)
	if w.cfg.Jitter > 0 && d > 0 {
		d += time.Duration(rand.Float64() * w.cfg.Jitter * float64(d))
	}
	return d
}

// scrub renders err without credentials, bounded in length.
func (w *Webhook) scrub(err error) string {
	s := w.redact.Replace(err.Error())
	if len(s) > maxErrorChars {
		s = s[:maxErrorChars] + "…(truncated)"
	}
	return s
}

// isPermanent reports whether retrying cannot help: a redirect, or the
// receiver refused the request itself (a 4xx other than 408, 409, 425 and
// 429).
func isPermanent(err error) bool {
	var re *redirectError
	if errors.As(err, &re) {
		return true
	}
	var hr *cehttp.Result
	if errors.As(err, &hr) {
		switch {
		case hr.StatusCode == http.StatusRequestTimeout, hr.StatusCode == http.StatusConflict,
			hr.StatusCode == http.StatusTooEarly, hr.StatusCode == http.StatusTooManyRequests:
			return false
		case hr.StatusCode >= 400 && hr.StatusCode < 500:
			return true
		}
	}
	return false
}

// redirectError is a 3xx answer, which the webhook never follows.
type redirectError struct{ status int }

func (e *redirectError) Error() string {
	return fmt.Sprintf("receiver answered %d %s; redirects are not followed (configure the final URL)",
		e.status, http.StatusText(e.status))
}

// errResponseTooLarge means a receiver's response exceeded max_response_bytes.
var errResponseTooLarge = errors.New("webhook response body exceeds max_response_bytes")

// transport signs every request body, sets the static headers, refuses
// redirects and bounds the response body it hands on.
type transport struct {
	next    http.RoundTripper
	secret  []byte
	now     func() time.Time
	static  map[string]string
	maxBody int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read request body: %w", err)
		}
		body = b
	}
	out := req.Clone(req.Context())
	for k, v := range t.static {
		out.Header.Set(k, v)
	}
	out.Header.Set(SignatureHeader, Sign(t.secret, t.now(), body))
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		_ = resp.Body.Close()
		return nil, &redirectError{status: resp.StatusCode}
	}
	// Read the answer here, bounded, so nothing downstream (sdk-go reads a
	// refusal's whole body into its error) reads more than maxBody.
	got, rerr := io.ReadAll(io.LimitReader(resp.Body, t.maxBody+1))
	_ = resp.Body.Close()
	if rerr != nil {
		return nil, fmt.Errorf("read webhook response: %w", rerr)
	}
	if int64(len(got)) > t.maxBody {
		return nil, fmt.Errorf("%w (%d bytes; status %d)", errResponseTooLarge, t.maxBody, resp.StatusCode)
	}
	resp.Body = io.NopCloser(bytes.NewReader(got))
	resp.ContentLength = int64(len(got))
	return resp, nil
}

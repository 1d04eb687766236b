package agentworker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/reinception/rein/internal/llm"
)

// HeaderIdempotencyKey carries ToolCall.IdempotencyKey on every HTTP call.
const HeaderIdempotencyKey = "Idempotency-Key"

// HTTPConfig configures the HTTP tool backend.
//
// Each call is POSTed to URL as the JSON ToolCall
// {"tenant","conversation","turn","step","name","arguments"} with the header
// Idempotency-Key: <tenant>.<conversation>/<turn>/<step>; a retried or
// resumed call carries the same key, so the service can apply it once.
// A 2xx answer is {"output": "..."} (the observation) or {"error": "..."}
// (a tool failure the agent sees); any other 2xx body is the observation
// verbatim. 4xx answers (but 408 and 429) are tool failures the agent sees;
// 5xx, 408, 429 and transport errors are retried with backoff, and when the
// attempts are spent the task itself is retried later with the same key.
type HTTPConfig struct {
	URL string
	// ToolsFile is the tool catalogue offered to the model: a JSON list of
	// {name, description, parameters} or of OpenAI-style
	// {"type":"function","function":{...}} entries.
	ToolsFile string
	// Tools is the catalogue when given directly (instead of ToolsFile).
	Tools []llm.Tool
	// Timeout bounds one attempt (default 10s).
	Timeout time.Duration
	// Attempts per call (default 3), Backoff before the second (default
	// 200ms, doubling).
	Attempts int
	Backoff  time.Duration
	// Headers are added to every request (e.g. Authorization).
	Headers map[string]string
	// Client overrides the HTTP client (default: a client with Timeout).
	Client *http.Client
}

func (c *HTTPConfig) defaults() {
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Attempts == 0 {
		c.Attempts = 3
	}
	if c.Backoff == 0 {
		c.Backoff = 200 * time.Millisecond
	}
}

// HTTPBackend runs every call on a remote service. Its conversations have
// no local state.
type HTTPBackend struct {
	cfg    HTTPConfig
	tools  []llm.Tool
	client *http.Client
}

// NewHTTPBackend checks cfg and loads the tool catalogue.
func NewHTTPBackend(cfg HTTPConfig) (*HTTPBackend, error) {
	cfg.defaults()
	if !strings.HasPrefix(cfg.URL, "http://") && !strings.HasPrefix(cfg.URL, "https://") {
		return nil, fmt.Errorf("%w: http backend URL %q must be http(s)", ErrInvalidConfig, cfg.URL)
	}
	if cfg.Attempts < 1 || cfg.Timeout < 0 || cfg.Backoff < 0 {
		return nil, fmt.Errorf("%w: http backend attempts, timeout or backoff out of range", ErrInvalidConfig)
	}
	tools := cfg.Tools
	if cfg.ToolsFile != "" {
		var err error
		if tools, err = llm.LoadToolList(cfg.ToolsFile); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{Timeout: cfg.Timeout}
	}
	return &HTTPBackend{cfg: cfg, tools: tools, client: client}, nil
}

// Tools is the configured catalogue.
func (b *HTTPBackend) Tools() []llm.Tool { return b.tools }

// External is true: calls act on another system.
func (b *HTTPBackend) External() bool { return true }

// Open returns the backend itself: it keeps no per-conversation state.
func (b *HTTPBackend) Open([]byte) (Conversation, error) { return b, nil }

// State is empty.
func (b *HTTPBackend) State() ([]byte, error) { return nil, nil }

// Call POSTs one call, retrying server failures.
func (b *HTTPBackend) Call(ctx context.Context, c ToolCall) (string, error) {
	if len(c.Arguments) == 0 {
		c.Arguments = json.RawMessage(`{}`)
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("%w: encode call: %w", ErrBackend, err)
	}
	backoff := b.cfg.Backoff
	var last error
	for attempt := 1; attempt <= b.cfg.Attempts; attempt++ {
		if attempt > 1 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return "", fmt.Errorf("%w: %s: %w (last: %v)", ErrBackend, c.Name, ctx.Err(), last)
			case <-t.C:
			}
			backoff *= 2
		}
		out, retry, err := b.once(ctx, c, body)
		if err == nil || !retry {
			return out, err
		}
		last = err
	}
	return "", fmt.Errorf("%w: %s: gave up after %d attempts: %v", ErrBackend, c.Name, b.cfg.Attempts, last)
}

// MaxToolResponseBytes bounds what rein reads of a tool backend's answer.
const MaxToolResponseBytes = 1 << 20

// once makes one attempt; retry says whether a failure may pass on retry.
func (b *HTTPBackend) once(ctx context.Context, c ToolCall, body []byte) (string, bool, error) {
	actx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, b.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return "", false, fmt.Errorf("%w: %w", ErrBackend, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(HeaderIdempotencyKey, c.IdempotencyKey())
	for k, v := range b.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return "", ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxToolResponseBytes+1))
	if err != nil {
		return "", true, err
	}
	if len(data) > MaxToolResponseBytes {
		// Never a silently cut answer: the agent sees that the tool's
		// answer was too large, as it sees any tool error.
		return "", false, &toolError{msg: fmt.Sprintf("Error: the tool's answer exceeds %d bytes", MaxToolResponseBytes)}
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests:
		return "", true, fmt.Errorf("HTTP %d: %s", resp.StatusCode, clip(string(data), 200))
	case resp.StatusCode >= 400:
		return "", false, &toolError{msg: fmt.Sprintf("Error: HTTP %d: %s", resp.StatusCode, clip(strings.TrimSpace(string(data)), 500))}
	}
	var r struct {
		Output *string `json:"output"`
		Error  string  `json:"error"`
	}
	if json.Unmarshal(data, &r) == nil {
		if r.Error != "" {
			return "", false, &toolError{msg: r.Error}
		}
		if r.Output != nil {
			return *r.Output, false, nil
		}
	}
	return string(data), false, nil
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

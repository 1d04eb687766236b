package llm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// CassetteEntry is one line of a cassette file (JSONL): the request key, the
// canonical request it was computed from (for people reading the file), and
// the recorded response.
type CassetteEntry struct {
	Key      string          `json:"key"`
	Provider string          `json:"provider"`
	Model    string          `json:"model"`
	Request  json.RawMessage `json:"request"`
	Response Response        `json:"response"`
}

// canonical* are the provider-independent parts of a Request that identify
// it. Tool-call ids are left out: they are transport details minted by the
// provider (or the simulator), not part of what was asked.
type canonicalRequest struct {
	Purpose  string             `json:"purpose"`
	System   string             `json:"system"`
	Messages []canonicalMessage `json:"messages"`
	Tools    []canonicalTool    `json:"tools,omitempty"`
	Schema   *canonicalSchema   `json:"schema,omitempty"`
}

type canonicalMessage struct {
	Role      string          `json:"role"`
	Content   string          `json:"content,omitempty"`
	ToolCalls []canonicalCall `json:"tool_calls,omitempty"`
	Name      string          `json:"name,omitempty"`
}

type canonicalCall struct {
	Name      string `json:"name"`
	Arguments any    `json:"arguments"`
}

type canonicalTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Parameters  any    `json:"parameters,omitempty"`
}

type canonicalSchema struct {
	Name   string `json:"name"`
	Schema any    `json:"schema"`
	Strict bool   `json:"strict,omitempty"`
}

// canonicalJSON decodes raw JSON so that re-encoding sorts object keys and
// drops insignificant whitespace; text that is not JSON stays a string.
func canonicalJSON(raw json.RawMessage) any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	return v
}

// CanonicalRequest is the JSON text RequestKey hashes: purpose, system,
// messages (tool-call ids removed, JSON arguments normalised), tools and
// response schema. Sampling settings (max tokens, temperature) and the
// provider are not part of it, so a cassette recorded against one provider
// replays for another.
func CanonicalRequest(req Request) []byte {
	c := canonicalRequest{Purpose: req.Purpose, System: req.System, Messages: make([]canonicalMessage, 0, len(req.Messages))}
	for _, m := range req.Messages {
		cm := canonicalMessage{Role: m.Role, Content: m.Content, Name: m.Name}
		for _, tc := range m.ToolCalls {
			cm.ToolCalls = append(cm.ToolCalls, canonicalCall{Name: tc.Name, Arguments: canonicalJSON(tc.Arguments)})
		}
		c.Messages = append(c.Messages, cm)
	}
	for _, t := range req.Tools {
		c.Tools = append(c.Tools, canonicalTool{Name: t.Name, Description: t.Description, Parameters: canonicalJSON(t.Parameters)})
	}
	if rs := req.ResponseSchema; rs != nil {
		c.Schema = &canonicalSchema{Name: rs.Name, Schema: canonicalJSON(rs.Schema), Strict: rs.Strict}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c) // only strings, numbers and decoded JSON: cannot fail
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// RequestKey is the stable cassette key of a request: "sha256:" and the
// first 32 hex digits of the SHA-256 of CanonicalRequest.
func RequestKey(req Request) string {
	sum := sha256.Sum256(CanonicalRequest(req))
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// Replay answers from a cassette, offline and deterministically. When a key
// was recorded several times (the same request asked again later in a run),
// the answers come back in recorded order, the last one repeating once they
// are used up.
type Replay struct {
	path    string
	model   string
	mu      sync.Mutex
	entries map[string][]Response
	next    map[string]int
}

// OpenCassette reads a cassette file. A malformed line is an error naming
// its line number.
func OpenCassette(path string) (*Replay, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCassette, err)
	}
	defer f.Close()
	r := &Replay{path: path, entries: map[string][]Response{}, next: map[string]int{}}
	br := bufio.NewReader(f)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var e CassetteEntry
			if uerr := json.Unmarshal(b, &e); uerr != nil {
				return nil, fmt.Errorf("%w: %s line %d: %w", ErrCassette, path, line, uerr)
			}
			if e.Key == "" {
				return nil, fmt.Errorf("%w: %s line %d: missing key", ErrCassette, path, line)
			}
			r.entries[e.Key] = append(r.entries[e.Key], e.Response)
			if r.model == "" {
				r.model = e.Model
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrCassette, path, err)
		}
	}
	if r.model == "" {
		r.model = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return r, nil
}

// Provider returns "replay".
func (r *Replay) Provider() string { return ProviderReplay }

// Model returns the model recorded in the cassette (or Config.Model).
func (r *Replay) Model() string { return r.model }

// Len is the number of distinct keys in the cassette.
func (r *Replay) Len() int { return len(r.entries) }

// Chat returns the recorded response, or an error wrapping ErrCassetteMiss
// that names the request's key.
func (r *Replay) Chat(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, err
	}
	key := RequestKey(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	rs, ok := r.entries[key]
	if !ok {
		return Response{}, fmt.Errorf("%w: key %s (purpose %q, %d messages) not in %s", ErrCassetteMiss, key, req.Purpose, len(req.Messages), r.path)
	}
	i := r.next[key]
	if i < len(rs)-1 {
		r.next[key] = i + 1
	}
	return rs[i], nil
}

// Recorder wraps a client and appends every successful call to a cassette
// file, one JSON line each, so the run can be replayed offline later.
type Recorder struct {
	inner Client
	path  string
	mu    sync.Mutex
}

// NewRecorder checks that path can be appended to (creating it) and wraps
// inner.
func NewRecorder(inner Client, path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: record file: %w", ErrInvalidConfig, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("%w: record file: %w", ErrInvalidConfig, err)
	}
	return &Recorder{inner: inner, path: path}, nil
}

// Provider is the wrapped client's provider.
func (r *Recorder) Provider() string { return r.inner.Provider() }

// Model is the wrapped client's model.
func (r *Recorder) Model() string { return r.inner.Model() }

// Chat calls the wrapped client and records a successful answer. A failure
// to write the cassette is returned as an error (with the response).
func (r *Recorder) Chat(ctx context.Context, req Request) (Response, error) {
	resp, err := r.inner.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	canon := CanonicalRequest(req)
	sum := sha256.Sum256(canon)
	line, err := json.Marshal(CassetteEntry{
		Key:      "sha256:" + hex.EncodeToString(sum[:16]),
		Provider: r.inner.Provider(),
		Model:    r.inner.Model(),
		Request:  canon,
		Response: resp,
	})
	if err != nil {
		return resp, fmt.Errorf("%w: encode entry: %w", ErrCassette, err)
	}
	line = append(line, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return resp, fmt.Errorf("%w: record: %w", ErrCassette, err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return resp, fmt.Errorf("%w: record: %w", ErrCassette, err)
	}
	if err := f.Close(); err != nil {
		return resp, fmt.Errorf("%w: record: %w", ErrCassette, err)
	}
	return resp, nil
}

// Available is the recorded client's availability.
func (r *Recorder) Available() bool { return IsAvailable(r.inner) }

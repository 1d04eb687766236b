package inception

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/testutil"
)

// fakeClient is a func-backed llm.Client for unit tests.
type fakeClient struct {
	mu    sync.Mutex
	calls []llm.Request
	chat  func(ctx context.Context, req llm.Request) (llm.Response, error)
}

func (f *fakeClient) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	f.mu.Unlock()
	return f.chat(ctx, req)
}
func (f *fakeClient) Provider() string { return "fake" }
func (f *fakeClient) Model() string    { return "fake-model" }

func (f *fakeClient) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.calls...)
}

// answering returns a client that always answers content.
func answering(content string) *fakeClient {
	return &fakeClient{chat: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Content: content, Model: "fake-model", Usage: llm.Usage{InputTokens: 100, OutputTokens: 20}}, nil
	}}
}

func miniTools(t testing.TB, domain string) []llm.Tool {
	t.Helper()
	tools, err := llm.LoadToolList(filepath.Join("testdata", "tools_"+domain+"_mini.json"))
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// golden compares got with testdata/name (rewritten under -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, name, []byte(got))
}

func dialogue(texts ...string) []Utterance {
	out := make([]Utterance, len(texts))
	for i, s := range texts {
		role := RoleUser
		if i%2 == 1 {
			role = RoleAgent
		}
		out[i] = Utterance{Role: role, Text: s}
	}
	return out
}

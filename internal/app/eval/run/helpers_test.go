package run

import (
	"context"
	"sync"
	"testing"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

// fakeClient answers with fn and keeps the requests it got.
type fakeClient struct {
	mu   sync.Mutex
	reqs []llm.Request
	fn   func(req llm.Request) llm.Response
}

func (f *fakeClient) Provider() string { return "fake" }
func (f *fakeClient) Model() string    { return "fake" }

func (f *fakeClient) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.fn(req), nil
}

func (f *fakeClient) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

// bundled returns the bundled scenario with the id.
func bundled(t *testing.T, id string) eval.Scenario {
	t.Helper()
	for _, s := range eval.BundledQuick(eval.LoadOptions{}) {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no bundled scenario %s", id)
	return eval.Scenario{}
}

// registered starts a tap with one conversation of s on task.
func registered(t *testing.T, first string, s eval.Scenario, task taubench.Task) (*tap, *conv) {
	t.Helper()
	tp := newTap()
	cv, end, err := tp.begin(context.Background(), first, s, task)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(end)
	return tp, cv
}

func user(text string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: text} }

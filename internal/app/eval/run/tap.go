package run

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/llm"
)

// The model calls of a pipeline do not carry a conversation id: the agent
// sees its messages, the inception module the surface dialogue. The tap
// ties a call to the conversation being played by the conversation's first
// user message, which the runner registers before publishing it. Two
// conversations with the same first message never run at once in one
// pipeline: begin waits for the other to finish (this happens between the
// trials of one scenario, which the runner plays in turn anyway).

// key is the SHA-256 of a conversation's first user message.
type key [32]byte

func keyOf(firstUser string) key { return sha256.Sum256([]byte(firstUser)) }

// conv is what the condition wrappers know of a conversation being played.
type conv struct {
	scenario eval.Scenario
	task     taubench.Task

	mu sync.Mutex
	// agentTokens and inceptionTokens are spent model tokens;
	// agentTime is the agent's model time per user turn.
	agentTokens int
	agentTime   map[int]time.Duration
	// refined marks the user turns whose self-refine pass was made.
	refined map[int]bool
}

func (c *conv) addAgent(turn int, d time.Duration, u llm.Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.agentTokens += u.Total()
	c.agentTime[turn] += d
}

// refineOnce reports whether turn still needs its self-refine pass and
// marks it done.
func (c *conv) refineOnce(turn int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refined[turn] {
		return false
	}
	c.refined[turn] = true
	return true
}

// tap is a pipeline's registry of conversations being played.
type tap struct {
	mu    sync.Mutex
	convs map[key]*conv
	freed chan struct{} // closed and replaced whenever a conversation ends
}

func newTap() *tap { return &tap{convs: map[key]*conv{}, freed: make(chan struct{})} }

// begin registers a conversation under its first user message, waiting
// while another conversation with the same first message is in play. The
// returned function ends it.
func (t *tap) begin(ctx context.Context, firstUser string, s eval.Scenario, task taubench.Task) (*conv, func(), error) {
	k := keyOf(firstUser)
	for {
		t.mu.Lock()
		if _, busy := t.convs[k]; !busy {
			c := &conv{scenario: s, task: task, agentTime: map[int]time.Duration{}, refined: map[int]bool{}}
			t.convs[k] = c
			t.mu.Unlock()
			return c, func() { t.end(k) }, nil
		}
		wait := t.freed
		t.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (t *tap) end(k key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.convs, k)
	close(t.freed)
	t.freed = make(chan struct{})
}

// lookup finds the conversation whose first user message is firstUser.
func (t *tap) lookup(firstUser string) *conv {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.convs[keyOf(firstUser)]
}

// firstUser and userTurns read an agent request's messages.
func firstUser(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			return m.Content
		}
	}
	return ""
}

func userTurns(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			n++
		}
	}
	return n
}

package agentworker

import (
	"context"
	"slices"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// Speculative inception hides the inception module's latency from clean
// turns. When a user turn is stored, the agent worker starts the turn's
// first model call at once, from the conversation's context as its last
// turn left it, while the detector judges the turn. When the turn's task
// comes:
//   - nothing planted (most turns): the speculative answer is the first
//     model answer — the very request the turn would have made — so the
//     turn skips the wait for the model it would have had after the
//     inception call;
//   - a thought planted: the speculation is cancelled and the turn runs
//     from the planted think step, as without speculation.
//
// Only the model call is speculative: no tool runs before the task (the
// detector's decision) arrives, so nothing with a side effect happens on
// a turn that turns out to need recovery. Speculation is best effort: a
// user turn missed (the subscription is plain NATS, not a consumer), a
// context that moved on, or a failed call just means the turn calls the
// model itself.
//
// Metrics: rein_agentworker_speculations_total{result} — hit (used), wasted (a
// thought was planted, or the context differed), miss (a turn with no
// speculation) — and rein_agentworker_speculation_wasted_tokens_total.
type speculator struct {
	s     *Stage
	slots chan struct{} // speculative calls in flight

	mu    sync.Mutex
	base  map[string]specBase  // conversation → its context after its last finished turn
	calls map[string]*specCall // conversation → the speculation of its next turn

	results *prometheus.CounterVec
	wasted  prometheus.Counter
}

// specBase is a conversation's context when its last turn finished.
type specBase struct {
	turn int
	msgs []llm.Message
}

// specCall is one speculative first model call.
type specCall struct {
	turn     int
	userText string
	baseLen  int // messages in the context it started from
	done     chan struct{}
	resp     llm.Response
	err      error
	cancel   context.CancelFunc
}

func newSpeculator(s *Stage, reg prometheus.Registerer) *speculator {
	return &speculator{s: s, slots: make(chan struct{}, 1024), base: map[string]specBase{}, calls: map[string]*specCall{},
		results: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerSpeculations,
			"Speculative first model calls of a turn, by result: hit (used), wasted (a thought was planted, or the context moved on), miss (no speculation for the turn).", "result"),
		wasted: telemetry.NewCounterVec(reg, telemetry.MAgentWorkerSpecTokens,
			"Tokens of speculative model calls that were not used.").WithLabelValues(),
	}
}

// subscribe listens to stored user turns (plain NATS: best effort).
func (sp *speculator) subscribe(nc *nats.Conn) (*nats.Subscription, error) {
	return nc.Subscribe(streams.UserTurnsAll, func(m *nats.Msg) {
		d, err := streams.Decode(m.Subject, m.Header, m.Data, 0)
		if err != nil {
			return
		}
		var t schemas.Turn
		if d.Payload(&t) != nil || t.Role != schemas.RoleUser {
			return
		}
		turn := t.Turn
		if turn == 0 {
			turn = d.Meta.Turn
		}
		sp.start(streams.ConversationKey(d.Meta.Tenant, d.Meta.Conversation), turn, t.Text)
	})
}

// finished records a conversation's context after a finished turn (called
// by the conversation's handler; the copy is the speculator's own).
func (sp *speculator) finished(key string, st *State) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if st.Status != StatusActive {
		delete(sp.base, key)
		return
	}
	sp.base[key] = specBase{turn: st.Turn, msgs: slices.Clone(st.Messages)}
}

// start begins the speculative first call of a user turn when the
// conversation's context is known and nothing is speculated for it yet.
func (sp *speculator) start(key string, turn int, text string) {
	sp.mu.Lock()
	b, known := sp.base[key]
	if _, busy := sp.calls[key]; busy || turn < 1 || (known && b.turn >= turn) || (!known && turn != 1) {
		sp.mu.Unlock()
		return
	}
	select {
	case sp.slots <- struct{}{}:
	default:
		sp.mu.Unlock()
		return // at the bound: the turn will call the model itself
	}
	ctx, cancel := context.WithTimeout(context.Background(), sp.s.cfg.ModelTimeout)
	c := &specCall{turn: turn, userText: text, baseLen: len(b.msgs), done: make(chan struct{}), cancel: cancel}
	sp.calls[key] = c
	msgs := append(slices.Clip(b.msgs), llm.Message{Role: llm.RoleUser, Content: text})
	sp.mu.Unlock()
	go func() {
		c.resp, c.err = sp.s.deps.Model.Chat(ctx, llm.Request{Purpose: llm.PurposeAgent, System: sp.s.system,
			Messages: msgs, Tools: sp.s.tools, MaxTokens: sp.s.cfg.MaxTokens})
		<-sp.slots
		close(c.done)
		// Taken (the turn cancels it once answered) or, when nobody takes
		// it, dropped at the model's timeout.
		<-ctx.Done()
		sp.mu.Lock()
		if sp.calls[key] == c {
			delete(sp.calls, key)
			sp.results.WithLabelValues("wasted").Inc()
			sp.wasted.Add(float64(c.resp.Usage.Total()))
		}
		sp.mu.Unlock()
		cancel()
	}()
}

// take hands the turn its speculation when it may be used: no thought
// planted, the same user text, started from the context the turn has.
// Otherwise the speculation is cancelled and counted as wasted.
func (sp *speculator) take(key string, st *State, task schemas.Task) *specCall {
	sp.mu.Lock()
	c := sp.calls[key]
	if c != nil && c.turn == st.Turn {
		delete(sp.calls, key)
	} else {
		c = nil
	}
	sp.mu.Unlock()
	switch {
	case c == nil:
		sp.results.WithLabelValues("miss").Inc()
		return nil
	case task.Inception != nil || c.userText != task.UserText || c.baseLen != st.TurnStart:
		c.cancel()
		sp.results.WithLabelValues("wasted").Inc()
		select {
		case <-c.done:
			sp.wasted.Add(float64(c.resp.Usage.Total()))
		default:
		}
		return nil
	}
	return c
}

// answer waits for a taken speculation: its response, or ok false when it
// failed (the turn then calls the model itself).
func (sp *speculator) answer(ctx context.Context, c *specCall) (llm.Response, bool) {
	select {
	case <-c.done:
	case <-ctx.Done():
		c.cancel()
		return llm.Response{}, false
	}
	c.cancel()
	if c.err != nil {
		sp.results.WithLabelValues("wasted").Inc()
		return llm.Response{}, false
	}
	sp.results.WithLabelValues("hit").Inc()
	return c.resp, true
}

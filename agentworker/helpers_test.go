package agentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

const (
	tenant = "acme"
	prompt = "You are the airline's customer service agent. Follow the policy."
)

// recorder wraps a client and keeps every request it saw.
type recorder struct {
	inner llm.Client
	mu    sync.Mutex
	reqs  []llm.Request
}

func (r *recorder) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.inner.Chat(ctx, req)
}
func (r *recorder) Provider() string { return r.inner.Provider() }
func (r *recorder) Model() string    { return r.inner.Model() }

func (r *recorder) requests() []llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llm.Request(nil), r.reqs...)
}

// funcModel is a fake model answering by a function.
type funcModel func(ctx context.Context, req llm.Request) (llm.Response, error)

func (f funcModel) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	return f(ctx, req)
}
func (f funcModel) Provider() string { return "fake" }
func (f funcModel) Model() string    { return "fake" }

func scripted(t *testing.T) *recorder {
	t.Helper()
	s, err := llm.LoadScript("testdata/agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return &recorder{inner: llm.NewScripted(s)}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startWorker runs a stage until the returned stop is called (or the test ends).
func startWorker(t *testing.T, h *rtest.JS, cfg agentworker.Config, deps agentworker.Deps) (*agentworker.Stage, func()) {
	t.Helper()
	if cfg.SystemPrompt == "" && cfg.SystemPromptFile == "" {
		cfg.SystemPrompt = prompt
	}
	deps.JS = h.JS
	if deps.Publisher == nil {
		deps.Publisher = streams.NewPublisher(h.JS, deps.Registerer, streams.PublisherConfig{})
	}
	deps.Logger = quiet()
	st, err := agentworker.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	return st, rtest.Run(t, "worker", st.Run)
}

// killable is a worker to be killed mid-turn: its model answers by answer
// until a call answer leaves to the crash (ok false), which waits there
// until the worker is killed and then fails, as a killed worker's would.
type killable struct {
	reached, release chan struct{}
	once             sync.Once
	cancel           context.CancelFunc
	done             <-chan error
}

func startKillable(t *testing.T, h *rtest.JS, cfg agentworker.Config, answer func(llm.Request) (llm.Response, bool)) *killable {
	t.Helper()
	w := &killable{reached: make(chan struct{}), release: make(chan struct{})}
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if resp, ok := answer(req); ok {
			return resp, nil
		}
		w.once.Do(func() { close(w.reached) })
		<-w.release
		return llm.Response{}, errors.New("worker killed")
	})
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	w.done = runWorker(t, h, ctx, cfg, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: prometheus.NewRegistry()}, Model: model})
	return w
}

// killAtCrash waits until the model reached the crash, kills the worker
// and waits until it has stopped.
func (w *killable) killAtCrash(t *testing.T) {
	t.Helper()
	<-w.reached
	w.cancel()
	close(w.release)
	if err := <-w.done; err != nil {
		t.Fatalf("killed worker: %v", err)
	}
}

// runWorker runs a stage under ctx; the channel yields Run's result.
func runWorker(t *testing.T, h *rtest.JS, ctx context.Context, cfg agentworker.Config, deps agentworker.Deps) <-chan error {
	t.Helper()
	cfg.SystemPrompt = prompt
	deps.JS, deps.Publisher, deps.Logger = h.JS, streams.NewPublisher(h.JS, deps.Registerer, streams.PublisherConfig{}), quiet()
	st, err := agentworker.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	return done
}

func publishTask(t *testing.T, h *rtest.JS, conv string, turn int, text string, inc *schemas.Inception) {
	t.Helper()
	task := schemas.Task{Turn: turn, UserText: text, DetectionID: schemas.EventID("detection", tenant, conv, turn), Inception: inc}
	ev, err := schemas.NewEvent(schemas.TypeTask, schemas.EventID("task", tenant, conv, turn), "",
		schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, task)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(context.Background(), bus.StreamTasks, bus.TaskSubject(tenant, conv), &ev); err != nil {
		t.Fatal(err)
	}
}

// event is one stored event.
type event struct {
	id, typ, subject string
	data             json.RawMessage
}

func readAll(t *testing.T, h *rtest.JS, stream string, filters ...string) []event {
	t.Helper()
	var out []event
	err := streams.ReadStream(context.Background(), h.JS, stream, streams.ReadOptions{Filters: filters}, func(r streams.Raw) error {
		if r.Decoded == nil {
			t.Fatalf("undecodable message in %s at %d", stream, r.Sequence)
		}
		out = append(out, event{id: r.Decoded.Event.ID(), typ: r.Decoded.Event.Type(), subject: r.Subject, data: r.Decoded.Event.Data()})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func steps(t *testing.T, h *rtest.JS, conv string) []schemas.Step {
	t.Helper()
	var out []schemas.Step
	for _, e := range readAll(t, h, bus.StreamSteps, bus.StepSubject(tenant, conv)) {
		var s schemas.Step
		if err := json.Unmarshal(e.data, &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

func agentTurns(t *testing.T, h *rtest.JS, conv string) []schemas.Turn {
	t.Helper()
	var out []schemas.Turn
	for _, e := range readAll(t, h, bus.StreamTurns, bus.TurnSubject(tenant, conv, schemas.RoleAgent)) {
		var x schemas.Turn
		if err := json.Unmarshal(e.data, &x); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	return out
}

func outcomes(t *testing.T, h *rtest.JS, conv string) []event {
	t.Helper()
	return readAll(t, h, bus.StreamOutcomes, bus.EscalationSubject(tenant, conv), bus.ReportSubject(tenant, conv))
}

// storedState reads a conversation's state from REIN_CONVERSATIONS.
func storedState(t *testing.T, h *rtest.JS, conv string) (agentworker.State, bool) {
	t.Helper()
	s, ok, err := agentworker.LoadState(context.Background(), h.JS, tenant, conv)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return agentworker.State{}, false
	}
	return *s, true
}

func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			}
			if hg := m.GetHistogram(); hg != nil {
				sum += float64(hg.GetSampleCount())
			}
		}
	}
	return sum
}

const wait = 10 * time.Second

// settled waits until every task delivered so far is acked: a turn's task
// is acked once all of its outputs are stored, while the agent turn alone
// can land before its steps and outcomes (the streams store in parallel).
func settled(t *testing.T, h *rtest.JS) {
	t.Helper()
	rtest.CheckFor(t, wait, "every task acked", func() bool {
		c, err := h.JS.Consumer(context.Background(), bus.StreamTasks, bus.DurableAgentWorker)
		if err != nil {
			return false
		}
		info, err := c.Info(context.Background())
		// Every stored task delivered (a consumer's pending count can lag a
		// publish by a moment) and none left unacknowledged.
		last := h.StreamLastSeq(t, bus.StreamTasks)
		return err == nil && info.Delivered.Stream >= last && info.NumAckPending == 0 && info.NumPending == 0
	})
}

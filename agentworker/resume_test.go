package agentworker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
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

// toolServer is a tool service that counts how often each idempotency key
// was applied (it does not deduplicate: a repeated key is a repeated effect).
type toolServer struct {
	mu      sync.Mutex
	applied map[string]int
	calls   []agentworker.ToolCall
	fail    int // answer 503 to this many requests first
}

func (s *toolServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail > 0 {
		s.fail--
		http.Error(w, "busy", http.StatusServiceUnavailable)
		return
	}
	var c agentworker.ToolCall
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	key := r.Header.Get(agentworker.HeaderIdempotencyKey)
	if key != c.IdempotencyKey() {
		http.Error(w, "idempotency key "+key+" does not match the call", http.StatusBadRequest)
		return
	}
	s.applied[key]++
	s.calls = append(s.calls, c)
	_ = json.NewEncoder(w).Encode(map[string]string{"output": `{"status":"cancelled"}`})
}

func (s *toolServer) snapshot() (map[string]int, []agentworker.ToolCall) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]int{}
	for k, v := range s.applied {
		m[k] = v
	}
	return m, append([]agentworker.ToolCall(nil), s.calls...)
}

var cancelTool = []llm.Tool{{Name: "cancel_reservation", Description: "Cancel a reservation.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"reservation_id":{"type":"string"}},"required":["reservation_id"]}`)}}

func lastIsTool(req llm.Request, name string) bool {
	m := req.Messages[len(req.Messages)-1]
	return m.Role == llm.RoleTool && m.Name == name
}

// TestCrashAndResumeWithoutRepeatedSideEffect kills a worker between two
// steps of a turn (after the side-effecting tool's result, before the
// model's next answer) and lets a new worker resume the redelivered task.
func TestCrashAndResumeWithoutRepeatedSideEffect(t *testing.T) {
	cases := []struct {
		name    string
		backend string
		live    time.Duration // Config.LiveStepsAfter
		early   int           // steps stored before the crash
	}{
		{"http backend", agentworker.BackendHTTP, 0, 0},
		{"domain backend", agentworker.BackendDomain, 0, 0},
		{"domain backend, live steps", agentworker.BackendDomain, -1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := rtest.StartJetStream(t, "")
			srv := &toolServer{applied: map[string]int{}, fail: 1}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			cfg := agentworker.Config{Backend: tc.backend, LiveStepsAfter: tc.live, HTTP: agentworker.HTTPConfig{URL: hs.URL, Tools: cancelTool}}

			// Worker A: decides to cancel, runs the tool, then dies while
			// waiting for the model.
			reached := make(chan struct{})
			release := make(chan struct{})
			var once sync.Once
			var aCalls atomic.Int32
			modelA := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
				aCalls.Add(1)
				if !lastIsTool(req, "cancel_reservation") {
					return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
				}
				once.Do(func() { close(reached) })
				<-release
				return llm.Response{}, errors.New("worker killed")
			})
			ctxA, killA := context.WithCancel(context.Background())
			doneA := runWorker(t, h, ctxA, cfg, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: prometheus.NewRegistry()}, Model: modelA})
			publishTask(t, h, "k1", 1, "cancel reservation Q7RM2K", nil)
			<-reached
			// Kill A: its consumer stops; the in-flight model call then
			// fails and the message is released for redelivery.
			killA()
			close(release)
			if err := <-doneA; err != nil {
				t.Fatalf("worker A: %v", err)
			}
			if n := len(agentTurns(t, h, "k1")); n != 0 {
				t.Fatalf("worker A replied (%d)", n)
			}
			if n := len(steps(t, h, "k1")); n != tc.early {
				t.Errorf("steps stored before the crash = %d, want %d", n, tc.early)
			}
			s, ok := storedState(t, h, "k1")
			if !ok || s.TurnDone || s.Messages[len(s.Messages)-1].Name != "cancel_reservation" {
				t.Fatalf("stored state after the crash: %+v", s)
			}

			// Worker B: a fresh process (nothing in memory) resumes.
			var bReqs []llm.Request
			var mu sync.Mutex
			modelB := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
				mu.Lock()
				bReqs = append(bReqs, req)
				mu.Unlock()
				if lastIsTool(req, "cancel_reservation") {
					return llm.Response{Content: "Your reservation is cancelled."}, nil
				}
				return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c9", Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
			})
			regB := prometheus.NewRegistry()
			startWorker(t, h, cfg, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: regB}, Model: modelB})
			rtest.CheckFor(t, wait, "worker B replies", func() bool { return len(agentTurns(t, h, "k1")) == 1 })
			settled(t, h)

			mu.Lock()
			if len(bReqs) != 1 || !lastIsTool(bReqs[0], "cancel_reservation") {
				t.Errorf("worker B asked the model %d times; first request ends with %+v", len(bReqs), bReqs[0].Messages[len(bReqs[0].Messages)-1])
			}
			mu.Unlock()
			if got := counter(t, regB, "rein_agentworker_tool_calls_total", map[string]string{"tool": "cancel_reservation"}); got != 0 {
				t.Errorf("worker B ran cancel_reservation %v times", got)
			}
			ss := steps(t, h, "k1")
			var cancels int
			for _, s := range ss {
				if s.Kind == schemas.StepToolCall && s.Name == "cancel_reservation" {
					cancels++
				}
			}
			if cancels != 1 || len(ss) != 3 {
				t.Errorf("steps = %+v", ss)
			}
			final, _ := storedState(t, h, "k1")
			if !final.TurnDone || final.Reply != "Your reservation is cancelled." {
				t.Errorf("final state = %+v", final)
			}
			switch tc.backend {
			case agentworker.BackendHTTP:
				applied, calls := srv.snapshot()
				if len(applied) != 1 || applied[tenant+".k1/1/1"] != 1 {
					t.Errorf("applied = %v, want the key acme.k1/1/1 once", applied)
				}
				if len(calls) != 1 || calls[0].Name != "cancel_reservation" || calls[0].Step != 1 || calls[0].Turn != 1 {
					t.Errorf("calls = %+v", calls)
				}
			case agentworker.BackendDomain:
				// The cancellation is in the stored overlay exactly once.
				if !bytes.Contains(final.Overlay, []byte(`"cancelled"`)) {
					t.Errorf("overlay lacks the cancellation: %s", final.Overlay)
				}
			}
			if n := h.StreamMsgs(t, bus.StreamDLQ); n != 0 {
				t.Errorf("DLQ = %d", n)
			}
		})
	}
}

// TestPersistPerTurnRerunsTheTurnOnTheOldOverlay: with Persist "turn", a
// crash mid-turn loses the turn's progress; the new worker re-runs it from
// the overlay stored before the turn, so the cancellation is applied once.
func TestPersistPerTurnRerunsTheTurnOnTheOldOverlay(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	cfg := agentworker.Config{Persist: agentworker.PersistTurn}
	cancelCall := llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}
	workerA := startKillable(t, h, cfg, func(req llm.Request) (llm.Response, bool) {
		return cancelCall, !lastIsTool(req, "cancel_reservation")
	})
	publishTask(t, h, "pt", 1, "cancel reservation Q7RM2K", nil)
	workerA.killAtCrash(t)
	if _, ok := storedState(t, h, "pt"); ok {
		t.Fatalf("state stored mid-turn with Persist=turn")
	}
	modelB := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if lastIsTool(req, "cancel_reservation") {
			return llm.Response{Content: "Cancelled."}, nil
		}
		return cancelCall, nil
	})
	regB := prometheus.NewRegistry()
	startWorker(t, h, cfg, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: regB}, Model: modelB})
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "pt")) == 1 })
	if got := counter(t, regB, "rein_agentworker_tool_calls_total", map[string]string{"tool": "cancel_reservation", "outcome": "ok"}); got != 1 {
		t.Errorf("cancel_reservation ok calls on B = %v, want 1", got)
	}
	final, _ := storedState(t, h, "pt")
	if !final.TurnDone || !bytes.Contains(final.Overlay, []byte(`"cancelled"`)) {
		t.Errorf("final state = %+v", final)
	}
}

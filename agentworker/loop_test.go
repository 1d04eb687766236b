package agentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	"github.com/reinception/rein/streams/natsserver"
)

func TestMaxStepsEscalates(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var calls atomic.Int32
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		calls.Add(1)
		return llm.Response{ToolCalls: []llm.ToolCall{{Name: "get_user_details", Arguments: json.RawMessage(`{"user_id":"nora_quist_4821"}`)}}}, nil
	})
	startWorker(t, h, agentworker.Config{MaxSteps: 3}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
	publishTask(t, h, "m1", 1, "tell me everything", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "m1")) == 1 })
	settled(t, h)
	if r := agentTurns(t, h, "m1")[0]; r.Text != agentworker.DefaultMaxStepsReply {
		t.Errorf("reply = %q", r.Text)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("model calls = %d, want 3", n)
	}
	outs := outcomes(t, h, "m1")
	if len(outs) != 1 || outs[0].typ != schemas.TypeEscalation || outs[0].id != schemas.EventID("escalation", tenant, "m1", 1) {
		t.Fatalf("outcomes = %+v", outs)
	}
	var e schemas.Escalation
	_ = json.Unmarshal(outs[0].data, &e)
	if e.Reason != schemas.ReasonMaxSteps || e.Turn != 1 || e.Summary == "" {
		t.Errorf("escalation = %+v", e)
	}
	// Three calls with distinct ids (the model gave none), each a call and a result step.
	ss := steps(t, h, "m1")
	if len(ss) != 7 || ss[6].Kind != schemas.StepReply || ss[0].CallID == ss[2].CallID {
		t.Errorf("steps = %+v", ss)
	}
	if got := counter(t, reg, "rein_agentworker_tool_calls_total", map[string]string{"tool": "get_user_details", "outcome": "ok"}); got != 3 {
		t.Errorf("tool calls = %v", got)
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": "max_steps"}); got != 1 {
		t.Errorf("max_steps turns = %v", got)
	}
	if s, _ := storedState(t, h, "m1"); s.Status != agentworker.StatusHuman {
		t.Errorf("status after max steps = %q", s.Status)
	}
}

// TestRedeliveredTaskRunsOnce: a second copy of a finished turn's task
// neither calls the model nor duplicates any output.
func TestRedeliveredTaskRunsOnce(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	_, stop := startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
	publishTask(t, h, "d1", 1, "cancel that one", inception("anaphora", "ambiguity_report"))
	// The task is acked once every output of the turn is stored (the agent
	// turn may land before the steps: the streams store in parallel).
	h.WaitAcked(t, wait, bus.StreamTasks, bus.DurableAgentWorker, 1)
	calls := len(model.requests())
	nSteps, nOut := len(steps(t, h, "d1")), len(outcomes(t, h, "d1"))
	if len(agentTurns(t, h, "d1")) != 1 || nSteps == 0 || nOut == 0 {
		t.Fatalf("first run: %d replies, %d steps, %d outcomes", len(agentTurns(t, h, "d1")), nSteps, nOut)
	}

	// Redelivery from scratch: a new worker (empty memory) and a lost
	// durable consumer replay the task. redeliver returns the new worker's
	// stop and how many messages it published on the conversation's output
	// subjects, stored or not.
	redeliver := func(stop func()) (func(), int) {
		t.Helper()
		stop()
		if err := h.JS.DeleteConsumer(context.Background(), bus.StreamTasks, bus.DurableAgentWorker); err != nil {
			t.Fatal(err)
		}
		seen, err := h.Conn.SubscribeSync("rein.*.acme.d1.>")
		if err != nil {
			t.Fatal(err)
		}
		defer seen.Unsubscribe()
		seenSteps, err := h.Conn.SubscribeSync("rein.*.acme.d1")
		if err != nil {
			t.Fatal(err)
		}
		defer seenSteps.Unsubscribe()
		_, stop = startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
		h.WaitAcked(t, wait, bus.StreamTasks, bus.DurableAgentWorker, 1) // consumed again
		if n := len(model.requests()); n != calls {
			t.Errorf("model called %d more times", n-calls)
		}
		n1, _, _ := seen.Pending()
		n2, _, _ := seenSteps.Pending()
		return stop, n1 + n2
	}
	stop, republished := redeliver(stop)
	// Every output of the turn is stored: nothing is published again,
	// which past the duplicate window would store it twice.
	if republished != 0 {
		t.Errorf("the finished turn was published again: %d messages", republished)
	}
	if len(agentTurns(t, h, "d1")) != 1 || len(steps(t, h, "d1")) != nSteps || len(outcomes(t, h, "d1")) != nOut {
		t.Errorf("outputs duplicated")
	}

	// An output lost (here the reply step, deleted): the turn's outputs
	// are published again.
	st, err := h.JS.Stream(context.Background(), bus.StreamSteps)
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.GetLastMsgForSubject(context.Background(), bus.StepSubject(tenant, "d1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(context.Background(), last.Sequence); err != nil {
		t.Fatal(err)
	}
	if _, republished = redeliver(stop); republished == 0 {
		t.Error("a turn with an output missing was not published again")
	}
}

// TestModelFailureRetriesInPlace: a failing model call is retried by the
// consume loop without repeating the tool call already made.
func TestModelFailureRetriesInPlace(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	var failed atomic.Bool
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if !lastIsTool(req, "get_reservation_details") {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "x", Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
		}
		if failed.CompareAndSwap(false, true) {
			return llm.Response{}, errors.New("503 from the model server")
		}
		return llm.Response{Content: "Here it is."}, nil
	})
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model})
	publishTask(t, h, "f1", 1, "show reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "f1")) == 1 })
	if got := counter(t, reg, "rein_agentworker_tool_calls_total", map[string]string{"tool": "get_reservation_details"}); got != 1 {
		t.Errorf("tool ran %v times", got)
	}
	if got := counter(t, reg, "rein_stage_messages_total", map[string]string{"stage": "agentworker", "outcome": "retry"}); got != 1 {
		t.Errorf("retries = %v", got)
	}
}

// TestStateConflict: a state changed behind the worker's back (another
// replica took over) is never overwritten; the worker reloads it.
func TestStateConflict(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
	publishTask(t, h, "s1", 1, "hello", nil)
	rtest.CheckFor(t, wait, "turn 1", func() bool { return len(agentTurns(t, h, "s1")) == 1 })
	// Another writer stores turn 1 again with an extra remark in the context.
	kv, err := h.JS.KeyValue(context.Background(), bus.BucketConversations)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), bus.ConversationKey(tenant, "s1"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		t.Fatal(err)
	}
	rec["messages"] = append(rec["messages"].([]any), map[string]any{"role": "assistant", "content": "(note from the other replica)"})
	b, _ := json.Marshal(rec)
	if _, err := kv.Update(context.Background(), e.Key(), b, e.Revision()); err != nil {
		t.Fatal(err)
	}
	publishTask(t, h, "s1", 2, "hello again", nil)
	rtest.CheckFor(t, wait, "turn 2", func() bool { return len(agentTurns(t, h, "s1")) == 2 })
	final, _ := storedState(t, h, "s1")
	var found bool
	for _, m := range final.Messages {
		found = found || m.Content == "(note from the other replica)"
	}
	if !found || final.Turn != 2 {
		t.Errorf("the other writer's state was overwritten: %+v", final.Messages)
	}
	// The worker noticed the other writer and reloaded: the model saw the
	// remark when it answered turn 2.
	reqs := model.requests()
	found = false
	for _, m := range reqs[len(reqs)-1].Messages {
		found = found || m.Content == "(note from the other replica)"
	}
	if !found {
		t.Errorf("turn 2 was answered from the stale copy: %+v", reqs[len(reqs)-1].Messages)
	}
}

func TestSidecarModeConsumesNothing(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	st, err := agentworker.New(agentworker.Config{Backend: agentworker.BackendNone}, agentworker.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	publishTask(t, h, "n1", 1, "hello", nil)
	if err := st.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := h.JS.Consumer(context.Background(), bus.StreamTasks, bus.DurableAgentWorker); err == nil {
		t.Errorf("sidecar mode created a consumer")
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  agentworker.Config
		ok   bool
	}{
		{"defaults", agentworker.Config{}, true},
		{"retail", agentworker.Config{Domain: "retail"}, true},
		{"unknown backend", agentworker.Config{Backend: "grpc"}, false},
		{"unknown domain", agentworker.Config{Domain: "hotel"}, false},
		{"http without url", agentworker.Config{Backend: agentworker.BackendHTTP}, false},
		{"zero-ish max steps", agentworker.Config{MaxSteps: -1}, false},
		{"prompt twice", agentworker.Config{SystemPrompt: "a", SystemPromptFile: "b"}, false},
		{"workers", agentworker.Config{Workers: 10000}, false},
		{"persist per turn", agentworker.Config{Persist: agentworker.PersistTurn}, true},
		{"unknown persist mode", agentworker.Config{Persist: "never"}, false},
		{"quiet period", agentworker.Config{QuietPeriod: time.Minute}, true},
		{"no automatic release", agentworker.Config{QuietPeriod: -1}, true},
		{"sub-second quiet period", agentworker.Config{QuietPeriod: time.Millisecond}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	h := rtest.StartJetStream(t, "")
	if _, err := agentworker.New(agentworker.Config{}, agentworker.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})}, Model: scripted(t)}); !errors.Is(err, agentworker.ErrInvalidConfig) {
		t.Errorf("New without a system prompt: %v", err)
	}
}

// TestTauBenchPolicyIsTheSystemPrompt: with a τ-bench data dir, the
// domain's policy document is the system prompt, byte for byte.
func TestTauBenchPolicyIsTheSystemPrompt(t *testing.T) {
	dir := filepath.Join(rtest.TauBench(t), "airline")
	policy, err := os.ReadFile(filepath.Join(dir, "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	st, err := agentworker.New(agentworker.Config{DataDir: dir}, agentworker.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: quiet()}, Model: model})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	defer func() { cancel(); <-done }()
	publishTask(t, h, "p1", 1, "hello", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "p1")) == 1 })
	if reqs := model.requests(); len(reqs) == 0 || reqs[0].System != string(policy) {
		t.Errorf("system prompt is not the policy document")
	}
}

// TestStateStoredTurnByTurn: each write appends a record under the
// conversation's key holding only its turn (a later record of a turn
// supersedes the earlier), and a fresh worker rebuilds the whole context
// from them.
func TestStateStoredTurnByTurn(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	// The script looks reservations up; this model cancels one as well.
	script := scripted(t)
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llm.RoleUser && last.Content == "cancel it":
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
		case last.Role == llm.RoleTool && last.Name == "cancel_reservation":
			return llm.Response{Content: "Cancelled."}, nil
		}
		return script.Chat(ctx, req)
	})
	_, stop := startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
	for turn, text := range []string{"hello", "show me reservation Q7RM2K", "cancel it"} {
		publishTask(t, h, "r1", turn+1, text, nil)
		rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "r1")) == turn+1 })
	}
	stop()
	recs := stateRecords(t, h, "r1")
	// The lookup changes nothing: its result is written with the end of
	// its turn. The cancellation does: a record after its result, another
	// at the end of the turn.
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4 (one per turn, two for the turn with a write)", len(recs))
	}
	var all []llm.Message
	for i, rec := range recs {
		if rec.Snapshot || len(rec.Messages) < 2 || rec.Messages[0].Role != llm.RoleUser {
			t.Fatalf("record %d = %+v", i, rec)
		}
		for _, m := range rec.Messages[1:] {
			if m.Role == llm.RoleUser {
				t.Fatalf("record %d (turn %d) holds another turn's user message: %+v", i, rec.Turn, rec.Messages)
			}
		}
		if i+1 < len(recs) && recs[i+1].Turn == rec.Turn {
			if len(recs[i+1].Messages) <= len(rec.Messages) {
				t.Fatalf("turn %d: the later record does not extend the earlier", rec.Turn)
			}
			continue // superseded
		}
		all = append(all, rec.Messages...)
	}
	// A fresh worker sees the three turns as context of the fourth.
	fresh := scripted(t)
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: fresh})
	publishTask(t, h, "r1", 4, "bye", nil)
	rtest.CheckFor(t, wait, "turn 4", func() bool { return len(agentTurns(t, h, "r1")) == 4 })
	first := fresh.requests()[0].Messages
	if len(first) != len(all)+1 {
		t.Fatalf("turn 4's first request has %d messages, want %d + the new user message", len(first), len(all))
	}
	for i, m := range all {
		if first[i].Role != m.Role || first[i].Content != m.Content || len(first[i].ToolCalls) != len(m.ToolCalls) {
			t.Errorf("message %d = %+v, stored %+v", i, first[i], m)
		}
	}
}

// TestLongConversationKeepsItsWholeContext: the bucket keeps the last 64
// records of a key; a conversation of more turns than that is still
// rebuilt whole, from the newest snapshot and the records after it.
func TestLongConversationKeepsItsWholeContext(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	_, stop := startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: scripted(t)})
	const turns = natsserver.ConversationHistory + 10
	for turn := 1; turn <= turns; turn++ {
		publishTask(t, h, "long", turn, fmt.Sprintf("message %d", turn), nil)
		rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "long")) == turn })
	}
	stop()
	recs := stateRecords(t, h, "long")
	if len(recs) != natsserver.ConversationHistory {
		t.Fatalf("%d records kept, want the bucket's history %d", len(recs), natsserver.ConversationHistory)
	}
	if recs[0].Turn == 1 {
		t.Fatal("the first turn's record is still kept: the test does not exceed the history")
	}
	snapshots := 0
	for _, r := range recs {
		if r.Snapshot {
			snapshots++
		}
	}
	if snapshots == 0 {
		t.Fatal("no snapshot among the kept records")
	}
	model := scripted(t)
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: model})
	publishTask(t, h, "long", turns+1, "bye", nil)
	rtest.CheckFor(t, wait, "last turn", func() bool { return len(agentTurns(t, h, "long")) == turns+1 })
	var users []string
	for _, m := range model.requests()[0].Messages {
		if m.Role == llm.RoleUser {
			users = append(users, m.Content)
		}
	}
	if len(users) != turns+1 {
		t.Fatalf("the context holds %d user messages, want %d", len(users), turns+1)
	}
	for i, u := range users[:turns] {
		if want := fmt.Sprintf("message %d", i+1); u != want {
			t.Fatalf("user message %d = %q, want %q", i, u, want)
		}
	}
}

// stateRecord is the stored form of a state record, as a reader of the
// bucket sees it.
type stateRecord struct {
	Turn      int           `json:"turn"`
	Snapshot  bool          `json:"snapshot"`
	TurnStart int           `json:"turn_start"`
	Messages  []llm.Message `json:"messages"`
}

// stateRecords reads the records kept under a conversation's key, oldest
// first.
func stateRecords(t *testing.T, h *rtest.JS, conv string) []stateRecord {
	t.Helper()
	kv, err := h.JS.KeyValue(context.Background(), bus.BucketConversations)
	if err != nil {
		t.Fatal(err)
	}
	es, err := kv.History(context.Background(), bus.ConversationKey(tenant, conv))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]stateRecord, len(es))
	for i, e := range es {
		if err := json.Unmarshal(e.Value(), &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestEvictedStatesReloadExactly: with room for one conversation in
// memory, two interleaved conversations miss the cache on every turn and
// each is rebuilt from its own records.
func TestEvictedStatesReloadExactly(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	model := scripted(t)
	startWorker(t, h, agentworker.Config{MaxConversations: 1}, agentworker.Deps{Model: model})
	for turn := 1; turn <= 3; turn++ {
		for _, conv := range []string{"ea", "eb"} {
			publishTask(t, h, conv, turn, fmt.Sprintf("%s says hello %d", conv, turn), nil)
			rtest.CheckFor(t, wait, conv+" reply", func() bool { return len(agentTurns(t, h, conv)) == turn })
		}
	}
	for _, req := range model.requests() {
		var users []string
		for _, m := range req.Messages {
			if m.Role == llm.RoleUser {
				users = append(users, m.Content)
			}
		}
		conv := users[0][:2]
		for i, u := range users {
			if want := fmt.Sprintf("%s says hello %d", conv, i+1); u != want {
				t.Fatalf("request context %q, want %q at %d", users, want, i)
			}
		}
	}
	if n := len(model.requests()); n < 6 {
		t.Fatalf("%d model requests", n)
	}
}

// TestStateSnapshotsBeforeTheBucketAgesThemOut: the bucket's records expire
// one by one after its max age (kv_ttl, 24h by default), so a conversation
// active for longer than that must always have a record holding its whole
// context that is younger: a write is a snapshot once the newest whole
// context is older than half the max age — counted from the clock of the
// worker that wrote it, or from its stored time for a worker that read it.
func TestStateSnapshotsBeforeTheBucketAgesThemOut(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	var ahead atomic.Int64 // how far the workers' clock runs ahead
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	play := func(turn int) {
		t.Helper()
		publishTask(t, h, "days", turn, fmt.Sprintf("message %d", turn), nil)
		rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "days")) == turn })
	}
	_, stop := startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: scripted(t), Now: now})
	play(1)
	play(2)
	ahead.Store(int64(13 * time.Hour)) // the first record is now older than 12h
	play(3)
	play(4)
	stop()
	// A worker that reads the state dates its whole context by the stored
	// time of the snapshot: just written, so no snapshot yet...
	ahead.Store(0)
	_, stop = startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: scripted(t), Now: now})
	play(5)
	stop()
	// ...but 13 hours later, one.
	ahead.Store(int64(13 * time.Hour))
	startWorker(t, h, agentworker.Config{}, agentworker.Deps{Model: scripted(t), Now: now})
	play(6)

	recs := stateRecords(t, h, "days")
	var got []bool
	for _, r := range recs {
		got = append(got, r.Snapshot)
	}
	if want := []bool{false, false, true, false, false, true}; !slices.Equal(got, want) {
		t.Fatalf("snapshot flags of the records = %v, want %v", got, want)
	}
	users := 0
	for _, m := range recs[2].Messages {
		if m.Role == llm.RoleUser {
			users++
		}
	}
	if users != 3 {
		t.Errorf("turn 3's snapshot holds %d user messages, want the whole context's 3", users)
	}
}

// TestOldAnsweredTasksAreNotRunAgain: a durable created anew reads
// REIN_TASKS from its start, long after the turns were answered, when their
// outputs' ids have left the duplicate window and their state may have
// expired. A task older than RecheckAfter, of a turn the state does not know
// of, whose reply is stored is acked without running the turn again; a later
// turn still runs.
func TestOldAnsweredTasksAreNotRunAgain(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	// Every task counts as old: stored over a nanosecond ago.
	cfg := agentworker.Config{RecheckAfter: time.Nanosecond}
	_, stop := startWorker(t, h, cfg, agentworker.Deps{Model: scripted(t)})
	publishTask(t, h, "r1", 1, "show me reservation Q7RM2K", nil)
	rtest.CheckFor(t, wait, "reply", func() bool { return len(agentTurns(t, h, "r1")) == 1 })
	stop()
	stepsBefore := len(steps(t, h, "r1"))
	// The state expired, and the task comes again under another id.
	expireState(t, h, "r1")
	ev, err := schemas.NewEvent(schemas.TypeTask, schemas.EventID("task", tenant, "r1", 1)+"-again", "",
		schemas.Meta{Tenant: tenant, Conversation: "r1", Turn: 1}, schemas.Task{Turn: 1, UserText: "show me reservation Q7RM2K", DetectionID: "d"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}).Publish(ctx, bus.StreamTasks, bus.TaskSubject(tenant, "r1"), &ev); err != nil {
		t.Fatal(err)
	}
	model := scripted(t)
	startWorker(t, h, cfg, agentworker.Deps{Model: model})
	h.WaitAcked(t, wait, bus.StreamTasks, bus.DurableAgentWorker, 2) // the repeated task
	if n := len(model.requests()); n != 0 {
		t.Errorf("the answered turn ran again: %d model requests", n)
	}
	if n := len(steps(t, h, "r1")); n != stepsBefore {
		t.Errorf("steps = %d after the repeated task, want %d", n, stepsBefore)
	}
	// A turn not answered yet runs, old or not.
	publishTask(t, h, "r1", 2, "thanks", nil)
	rtest.CheckFor(t, wait, "turn 2's reply", func() bool { return len(agentTurns(t, h, "r1")) == 2 })
}

// TestOldHumanPathTasksDoNotReachTheModel: a turn on the human path stores
// no reply. Replayed long after, with the conversation's state expired, it
// is acked without reaching the model: the stored escalation says the
// conversation belongs to a human.
func TestOldHumanPathTasksDoNotReachTheModel(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	cfg := agentworker.Config{RecheckAfter: time.Nanosecond} // every task is old
	_, stop := startWorker(t, h, cfg, agentworker.Deps{Model: scripted(t)})
	publishTask(t, h, "h1", 1, "I want seat selection", inception("unsupported_action", "transfer_to_human_agents"))
	publishTask(t, h, "h1", 2, "hello? are you there?", nil)
	rtest.CheckFor(t, wait, "turn 2 on the human path", func() bool {
		s, ok := storedState(t, h, "h1")
		return ok && s.Turn == 2 && s.HumanTurns == 1
	})
	stop()
	if n := len(outcomes(t, h, "h1")); n != 1 {
		t.Fatalf("outcomes = %d, want the escalation", n)
	}
	expireState(t, h, "h1")
	if err := h.JS.DeleteConsumer(ctx, bus.StreamTasks, bus.DurableAgentWorker); err != nil {
		t.Fatal(err)
	}
	model := scripted(t)
	startWorker(t, h, cfg, agentworker.Deps{Model: model})
	h.WaitAcked(t, wait, bus.StreamTasks, bus.DurableAgentWorker, 2)
	// Turn 1 is answered (its reply is stored); turn 2 is the human's.
	if n := len(model.requests()); n != 0 {
		t.Errorf("the replayed turns reached the model: %d requests", n)
	}
	if n := len(agentTurns(t, h, "h1")); n != 1 {
		t.Errorf("agent turns = %d, want 1", n)
	}
}

// expireState removes a conversation's agent state from the bucket, as its
// max age would.
func expireState(t *testing.T, h *rtest.JS, conv string) {
	t.Helper()
	kv, err := h.JS.KeyValue(context.Background(), bus.BucketConversations)
	if err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(context.Background(), bus.ConversationKey(tenant, conv)); err != nil {
		t.Fatal(err)
	}
}

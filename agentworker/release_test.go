package agentworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// blipModel is a local OpenAI-compatible endpoint that answers 500 while
// down, else a plain text reply; it counts the requests it gets.
type blipModel struct {
	down  atomic.Bool
	calls atomic.Int32
}

const blipReply = "Happy to help with that."

func (b *blipModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	b.calls.Add(1)
	if b.down.Load() {
		http.Error(w, `{"error":{"message":"upstream failure","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"blip",
"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%q}}],
"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, blipReply)
}

// turnOutcomes maps each turn of a conversation to the outcomes stored
// for it: agent replies, escalations, unanswered records.
func turnOutcomes(t *testing.T, h *rtest.JS, conv string) map[int][]string {
	t.Helper()
	got := map[int][]string{}
	for _, a := range agentTurns(t, h, conv) {
		got[a.Turn] = append(got[a.Turn], "reply")
	}
	for _, e := range readAll(t, h, bus.StreamOutcomes, bus.EscalationSubject(tenant, conv)) {
		var esc schemas.Escalation
		if err := json.Unmarshal(e.data, &esc); err != nil {
			t.Fatal(err)
		}
		got[esc.Turn] = append(got[esc.Turn], "escalation "+esc.Reason)
	}
	for _, u := range unanswered(t, h, conv) {
		got[u.Turn] = append(got[u.Turn], "unanswered "+u.Reason)
	}
	return got
}

func releases(t *testing.T, h *rtest.JS, conv string) []schemas.Release {
	t.Helper()
	var out []schemas.Release
	for _, e := range readAll(t, h, bus.StreamOutcomes, bus.ReleaseSubject(tenant, conv)) {
		var r schemas.Release
		if err := json.Unmarshal(e.data, &r); err != nil {
			t.Fatal(err)
		}
		if e.id != schemas.EventID("release", tenant, conv, r.Turn) {
			t.Errorf("release id %s, want the handoff turn's", e.id)
		}
		out = append(out, r)
	}
	return out
}

// The model blip of issue 32: the agent's model answers 500 for a while;
// the turns in flight are handed to a human (agent_unavailable); every
// later turn of those conversations ends with a visible human_path record
// (before: nothing in any stream); an operator's release (what `rein
// handoff release` runs) gives one conversation back, the quiet period the
// other (an injected clock, not wall time), and each next turn is answered
// by the agent. Every turn has exactly one outcome.
func TestAModelBlipHandsConversationsToAHumanUntilReleased(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	blip := &blipModel{}
	blip.down.Store(true)
	srv := httptest.NewServer(blip)
	t.Cleanup(srv.Close)
	model, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, Model: "blip", BaseURL: srv.URL + "/v1", APIKey: "sk-test",
		MaxRetries: 1, RetryBaseDelay: time.Millisecond, RetryMaxDelay: 5 * time.Millisecond, BreakerCooldown: 10 * time.Millisecond,
		Endpoint: "agent"}, reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := rtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	startWorker(t, h, agentworker.Config{QuietPeriod: time.Minute},
		agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model, Now: clk.Now})
	ctx := context.Background()
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	convs := []string{"op", "quiet"}

	// The blip: turn 1 of both conversations in flight.
	for _, c := range convs {
		publishTask(t, h, c, 1, "change my flight to Friday", nil)
	}
	for _, c := range convs {
		rtest.CheckFor(t, wait, c+": turn 1 handed to a human", func() bool { return len(turnOutcomes(t, h, c)[1]) == 1 })
	}
	blip.down.Store(false) // the model is back after the blip
	calls := blip.calls.Load()

	// Later turns: each ends visibly on the human path, none reaches the
	// model, and no release happens before the quiet period.
	for turn := 2; turn <= 3; turn++ {
		for _, c := range convs {
			publishTask(t, h, c, turn, fmt.Sprintf("hello? (%d)", turn), nil)
		}
	}
	for _, c := range convs {
		rtest.CheckFor(t, wait, c+": turns 2 and 3 recorded", func() bool { return len(unanswered(t, h, c)) == 2 })
		for _, u := range unanswered(t, h, c) {
			if u.Reason != schemas.UnansweredHumanPath || u.EscalatedTurn != 1 || u.HandoffReason != schemas.ReasonAgentUnavailable {
				t.Errorf("%s: record %+v, want human_path after the agent_unavailable handoff of turn 1", c, u)
			}
		}
	}
	if n := blip.calls.Load(); n != calls {
		t.Errorf("the model got %d requests for turns on the human path", n-calls)
	}

	// An operator gives "op" back; a second release of the same handoff,
	// or one of a conversation never handed over, is refused.
	rel, err := agentworker.Release(ctx, h.JS, pub, tenant, "op", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if rel.Turn != 1 || rel.Reason != schemas.ReleaseOperator || rel.HandoffReason != schemas.ReasonAgentUnavailable || rel.By != "alice" {
		t.Errorf("release %+v", rel)
	}
	if _, err := agentworker.Release(ctx, h.JS, pub, tenant, "op", "alice"); !errors.Is(err, agentworker.ErrAlreadyReleased) {
		t.Errorf("second release: %v, want ErrAlreadyReleased", err)
	}
	if _, err := agentworker.Release(ctx, h.JS, pub, tenant, "never", "alice"); !errors.Is(err, agentworker.ErrNotHandedOff) {
		t.Errorf("release of a conversation never handed over: %v, want ErrNotHandedOff", err)
	}
	for _, c := range convs {
		publishTask(t, h, c, 4, "can you do it now?", nil)
	}
	rtest.CheckFor(t, wait, "op: turn 4 answered by the agent", func() bool { return len(agentTurns(t, h, "op")) == 1 })
	if a := agentTurns(t, h, "op")[0]; a.Turn != 4 || a.Text != blipReply {
		t.Errorf("op: reply %+v, want the agent's for turn 4", a)
	}
	// "quiet" still belongs to the human: its quiet period has not passed.
	rtest.CheckFor(t, wait, "quiet: turn 4 on the human path", func() bool { return len(unanswered(t, h, "quiet")) == 3 })

	// The quiet period passes: the next turn of "quiet" is the agent's
	// again, and the release is recorded.
	clk.Advance(time.Minute)
	publishTask(t, h, "quiet", 5, "still there?", nil)
	rtest.CheckFor(t, wait, "quiet: turn 5 answered by the agent", func() bool { return len(agentTurns(t, h, "quiet")) == 1 })
	got := releases(t, h, "quiet")
	if len(got) != 1 || got[0].Turn != 1 || got[0].Reason != schemas.ReleaseQuietPeriod || got[0].By != bus.StageAgentWorker {
		t.Errorf("quiet: releases %+v, want one quiet_period release of the turn-1 handoff", got)
	}
	if got := releases(t, h, "op"); len(got) != 1 || got[0].Reason != schemas.ReleaseOperator {
		t.Errorf("op: releases %+v, want the operator's", got)
	}
	settled(t, h)

	// One outcome per turn, each the expected one.
	want := map[string]map[int]string{
		"op":    {1: "escalation agent_unavailable", 2: "unanswered human_path", 3: "unanswered human_path", 4: "reply"},
		"quiet": {1: "escalation agent_unavailable", 2: "unanswered human_path", 3: "unanswered human_path", 4: "unanswered human_path", 5: "reply"},
	}
	for c, turns := range want {
		got := turnOutcomes(t, h, c)
		for turn, w := range turns {
			if len(got[turn]) != 1 || got[turn][0] != w {
				t.Errorf("%s turn %d: outcomes %v, want [%s]", c, turn, got[turn], w)
			}
		}
	}
	for reason, n := range map[string]float64{schemas.ReleaseOperator: 1, schemas.ReleaseQuietPeriod: 1} {
		if got := counter(t, reg, "rein_agentworker_releases_total", map[string]string{"reason": reason}); got != n {
			t.Errorf("releases %s = %v, want %v", reason, got, n)
		}
	}
	if got := counter(t, reg, "rein_agentworker_turns_total", map[string]string{"outcome": agentworker.OutcomeHuman}); got != 5 {
		t.Errorf("human_path turns = %v, want 5", got)
	}
	if st, _ := storedState(t, h, "quiet"); st.Status != agentworker.StatusActive {
		t.Errorf("quiet: status %q after its release, want active", st.Status)
	}
}

// A conversation the agent itself transferred to a human is never given
// back by the quiet period, however long it lasts: its later turns keep
// their human_path records, naming the transfer.
func TestATransferIsNeverReleasedByTheQuietPeriod(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	model := scripted(t)
	clk := rtest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	startWorker(t, h, agentworker.Config{QuietPeriod: time.Minute},
		agentworker.Deps{StageDeps: streams.StageDeps{Registerer: reg}, Model: model, Now: clk.Now})
	publishTask(t, h, "tr", 1, "I want seat selection", inception("unsupported_action", "transfer_to_human_agents"))
	rtest.CheckFor(t, wait, "turn 1 transferred", func() bool { return len(agentTurns(t, h, "tr")) == 1 })
	calls := len(model.requests())
	clk.Advance(24 * time.Hour)
	publishTask(t, h, "tr", 2, "hello?", nil)
	rtest.CheckFor(t, wait, "turn 2 recorded", func() bool { return len(unanswered(t, h, "tr")) == 1 })
	if u := unanswered(t, h, "tr")[0]; u.Reason != schemas.UnansweredHumanPath || u.EscalatedTurn != 1 || u.HandoffReason != schemas.ReasonTransfer {
		t.Errorf("record %+v, want human_path after the transfer of turn 1", u)
	}
	if n := len(model.requests()); n != calls {
		t.Errorf("the model was asked %d times after the transfer", n-calls)
	}
	if got := releases(t, h, "tr"); len(got) != 0 {
		t.Errorf("releases %+v of a transfer", got)
	}
}

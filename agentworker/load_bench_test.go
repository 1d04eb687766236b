package agentworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
)

type noCalls struct{}

func (noCalls) Call(context.Context, ToolCall) (string, error) { return "", nil }
func (noCalls) State() ([]byte, error)                         { return nil, nil }

// BenchmarkStoreLoad: a cache miss of a ten-turn conversation read back
// from the bucket, each turn stored as the bench agent stores it (a record
// after its tool result, another at its end, a result of ≈ 1 KB).
func BenchmarkStoreLoad(b *testing.B) {
	h := rtest.StartJetStream(b, "")
	ctx := context.Background()
	st, err := openStore(ctx, h.JS)
	if err != nil {
		b.Fatal(err)
	}
	s := &State{progress: progress{Status: StatusActive}, conv: noCalls{}}
	result := `{"reservation_id":"Q7RM2K","flights":[` + strings.Repeat(`{"origin":"JFK","destination":"SFO","date":"2024-05-15","price":412},`, 14) + `{}]}`
	for n := 1; n <= 10; n++ {
		s.begin(n, schemas.Task{Turn: n, UserText: fmt.Sprintf("show me reservation Q7RM2K, turn %d", n)})
		id := fmt.Sprintf("c%d", n)
		s.Messages = append(s.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Name: "get_reservation_details", Content: result})
		if err := st.save(ctx, "acme", "bench", s, nil); err != nil {
			b.Fatal(err)
		}
		s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: "Your reservation Q7RM2K is confirmed."})
		s.TurnDone, s.Outcome, s.Reply = true, OutcomeReply, "Your reservation Q7RM2K is confirmed."
		if err := st.save(ctx, "acme", "bench", s, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		got, ok, err := st.load(ctx, "acme", "bench", 11)
		if err != nil || !ok || len(got.Messages) != len(s.Messages) {
			b.Fatalf("load: %v %v", ok, err)
		}
	}
}

// TestLoadWhateverTheTurn: a later turn's miss reads the records without
// the first turn's existence probe; both find a stored state alike, and
// neither finds one where nothing is stored (a state expired with the
// bucket's max age, a task of a conversation never seen).
func TestLoadWhateverTheTurn(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	ctx := context.Background()
	st, err := openStore(ctx, h.JS)
	if err != nil {
		t.Fatal(err)
	}
	for _, turn := range []int{0, 1, 5} {
		s, ok, err := st.load(ctx, "acme", "none", turn)
		if err != nil || ok || s == nil || s.Status != StatusActive || len(s.Messages) != 0 {
			t.Fatalf("load of nothing stored, turn %d: %+v, %v, %v; want a new state", turn, s, ok, err)
		}
	}
	s := &State{progress: progress{Status: StatusActive}, conv: noCalls{}}
	s.begin(1, schemas.Task{Turn: 1, UserText: "hello"})
	s.Messages = append(s.Messages, llm.Message{Role: llm.RoleAssistant, Content: "hi"})
	s.TurnDone = true
	if err := st.save(ctx, "acme", "one", s, nil); err != nil {
		t.Fatal(err)
	}
	for _, turn := range []int{0, 1, 2} {
		got, ok, err := st.load(ctx, "acme", "one", turn)
		if err != nil || !ok || len(got.Messages) != len(s.Messages) || got.seq != s.seq {
			t.Fatalf("load for turn %d: %v, %v; want the stored state", turn, ok, err)
		}
	}
}

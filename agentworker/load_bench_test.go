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
		got, ok, err := st.load(ctx, "acme", "bench")
		if err != nil || !ok || len(got.Messages) != len(s.Messages) {
			b.Fatalf("load: %v %v", ok, err)
		}
	}
}

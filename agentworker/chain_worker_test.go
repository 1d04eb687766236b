package agentworker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
)

// The records a worker stores chain: with room for one conversation in
// memory, two interleaved conversations miss on every turn, and each miss
// decodes one record per turn although a turn with a write stored two.
func TestStoredRecordsChainOneATurn(t *testing.T) {
	h := rtest.StartJetStream(t, "")
	script := scripted(t)
	// Every turn cancels a reservation: a record after the result, one at
	// the end of the turn.
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llm.RoleUser {
			return llm.Response{ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("c%d", len(req.Messages)), Name: "cancel_reservation", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
		}
		if last.Role == llm.RoleTool && last.Name == "cancel_reservation" {
			return llm.Response{Content: "Done."}, nil
		}
		return script.Chat(ctx, req)
	})
	_, stop := startWorker(t, h, agentworker.Config{MaxConversations: 1}, agentworker.Deps{Model: model})
	const turns = 4
	for turn := 1; turn <= turns; turn++ {
		for _, conv := range []string{"ca", "cb"} {
			publishTask(t, h, conv, turn, fmt.Sprintf("%s turn %d", conv, turn), nil)
			rtest.CheckFor(t, wait, conv+" reply", func() bool { return len(agentTurns(t, h, conv)) == turn })
		}
	}
	stop()
	for _, conv := range []string{"ca", "cb"} {
		if n := len(stateRecords(t, h, conv)); n != 2*turns {
			t.Fatalf("%s: %d records stored, want %d (two a turn)", conv, n, 2*turns)
		}
		n, ok, err := agentworker.ChainLen(context.Background(), h.JS, tenant, conv)
		if err != nil || !ok || n != turns {
			t.Fatalf("%s: a miss decodes %d records (chained %v, %v), want %d", conv, n, ok, err, turns)
		}
	}
}

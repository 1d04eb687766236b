package dashboard

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/internal/testutil/bustest"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// The conversation view shows a dev.rein.steps.v1 as the single steps it
// stands for: the same entries but for their stream sequence.
func TestTimelineShowsABatchAsItsSteps(t *testing.T) {
	js := testutil.StartJetStream(t, "")
	pub := streams.NewPublisher(js.JS, prometheus.NewRegistry(), streams.PublisherConfig{})
	ctx := context.Background()
	steps := []schemas.Step{
		{Turn: 1, Step: 1, Kind: schemas.StepThink, Name: schemas.ToolThink, CallID: "rein_think_1", Arguments: json.RawMessage(`{"thought":"ask"}`), Injected: true},
		{Turn: 1, Step: 2, Kind: schemas.StepToolCall, Name: "get_user_details", CallID: "c1", Arguments: json.RawMessage(`{"user_id":"u1"}`)},
		{Turn: 1, Step: 3, Kind: schemas.StepToolResult, Name: "get_user_details", CallID: "c1", Output: `{"name":"Nora"}`},
		{Turn: 1, Step: 4, Kind: schemas.StepReply, Output: "Which one?"},
	}
	outs := bustest.StepsBothWays(t, "acme", steps)
	if _, err := pub.PublishAll(ctx, outs...); err != nil {
		t.Fatal(err)
	}
	var got [2]string
	for i, conv := range []string{"single", "batch"} {
		c, err := readConversation(ctx, js.JS, "acme", conv, 100)
		if err != nil {
			t.Fatal(err)
		}
		for j := range c.Events {
			c.Events[j].Sequence = 0
		}
		c.Conversation = ""
		b, _ := json.Marshal(c)
		got[i] = strings.ReplaceAll(string(b), "acme."+conv+".", "acme.X.")
	}
	if got[0] != got[1] || strings.Count(got[0], `"kind":"step"`) != 4 {
		t.Errorf("conversations differ:\nsingles %s\nbatch   %s", got[0], got[1])
	}
}

package agentworker_test

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// BenchmarkAgentTurns measures the stage alone: b.N turns (one tool call
// each, a zero-latency fake model, the sample airline domain) over 100
// conversations, from published tasks to stored agent replies.
func BenchmarkAgentTurns(b *testing.B) {
	h := rtest.StartJetStream(b, "")
	if os.Getenv("BENCH_TCP") != "" {
		nc, js := h.ConnectTCP(b, natsserver.IdentityAdmin)
		h = &rtest.JS{Server: h.Server, Conn: nc, JS: js, Keys: h.Keys}
	}
	model := funcModel(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if lastIsTool(req, "get_reservation_details") {
			return llm.Response{Content: "Here are the details."}, nil
		}
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "c", Name: "get_reservation_details", Arguments: json.RawMessage(`{"reservation_id":"Q7RM2K"}`)}}}, nil
	})
	st, err := agentworker.New(agentworker.Config{SystemPrompt: prompt}, agentworker.Deps{StageDeps: streams.StageDeps{JS: h.JS, Publisher: streams.NewPublisher(h.JS, nil, streams.PublisherConfig{}), Logger: quiet()}, Model: model})
	if err != nil {
		b.Fatal(err)
	}
	pub := streams.NewPublisher(h.JS, nil, streams.PublisherConfig{})
	convs := 100
	if v, err := strconv.Atoi(os.Getenv("BENCH_CONVS")); err == nil {
		convs = v
	}
	outs := make([]streams.Out, 0, b.N)
	for i := 0; i < b.N; i++ {
		conv, turn := "b"+strconv.Itoa(i%convs), i/convs+1
		ev, err := schemas.NewEvent(schemas.TypeTask, schemas.EventID("task", tenant, conv, turn), "",
			schemas.Meta{Tenant: tenant, Conversation: conv, Turn: turn}, schemas.Task{Turn: turn, UserText: "show reservation Q7RM2K"})
		if err != nil {
			b.Fatal(err)
		}
		outs = append(outs, streams.Out{Stream: bus.StreamTasks, Subject: bus.TaskSubject(tenant, conv), Event: &ev})
	}
	for i := 0; i < len(outs); i += 1000 {
		if _, err := pub.PublishAll(context.Background(), outs[i:min(i+1000, len(outs))]...); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- st.Run(ctx) }()
	rtest.CheckFor(b, 10*time.Minute, "all replies", func() bool {
		return h.StreamMsgs(b, bus.StreamTurns) >= uint64(b.N)
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "turns/s")
	b.StopTimer()
	cancel()
	<-done
}

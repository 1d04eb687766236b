package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/reinception/rein/internal/telemetry"
	rtest "github.com/reinception/rein/internal/testutil"
)

// One turn posted over HTTP under a platform's trace yields one trace
// through every stage: the ingress, the detector (which stores the task
// with the detection), the agent worker, with the agent's model call as a
// child span.
func TestOneTurnTracesThroughEveryStage(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(noop.NewTracerProvider()) })

	dir := filepath.Join(t.TempDir(), "data")
	natsAddr, httpAddr := freePort(t), freePort(t)
	stop := startServe(t, dir, natsAddr, httpAddr, "--agent-script", "../../internal/app/demo/demodata/agent.yaml")
	defer stop()
	tok, err := os.ReadFile(filepath.Join(dir, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, root := tp.Tracer("platform").Start(context.Background(), "platform.turn")
	body := `{"specversion":"1.0","id":"t1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"trace1","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"Can you book me a hotel in Paris too?"}}`
	r, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/v1/turns", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/cloudevents+json")
	r.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	r.Header.Set("traceparent", telemetry.TraceparentOf(ctx))
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %v %v", resp, err)
	}
	resp.Body.Close()
	root.End()
	want := []string{"rein.ingress", "rein.detector", "rein.agentworker", "rein.model"}
	traceID := root.SpanContext().TraceID()
	rtest.CheckFor(t, 30*time.Second, "every stage's span in the platform's trace", func() bool {
		seen := map[string]bool{}
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == traceID {
				seen[s.Name] = true
			}
		}
		for _, n := range want {
			if !seen[n] {
				return false
			}
		}
		return true
	})
	// The stages form a chain: each stage's span is the child of the span
	// that published its input.
	byID := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byID[s.SpanContext.SpanID().String()] = s
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "rein.agentworker" && s.SpanContext.TraceID() == traceID {
			if p := byID[s.Parent.SpanID().String()]; p.Name != "rein.detector" {
				t.Errorf("the agent worker's span has parent %q, want rein.detector", p.Name)
			}
		}
	}
}

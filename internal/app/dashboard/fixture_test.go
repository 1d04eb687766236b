package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// The conversation the tests publish, as a running system would: a clear
// first turn, then an unsupported request that activates rein, plants a
// thought, runs the injected think step and escalates.
const (
	tenant      = "acme"
	conv        = "conv-1"
	plantedText = "The user wants first class, which this airline's tools cannot book; do not pretend — transfer to a human agent with a summary."
	hostileText = `Can you upgrade it to first class? <img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script>`
	escSummary  = "Customer asked for a first class upgrade on reservation ABC123; cabin not bookable via tools."
	reportText  = "The user said \"that one\" with two flights on the reservation."
)

type fixture struct {
	js  *testutil.JS
	pub *streams.Publisher
	reg *prometheus.Registry

	decisions   *prometheus.CounterVec
	activations *prometheus.CounterVec
}

// newFixture starts JetStream, a registry with the detector's metrics and
// the JetStream collector (as cmd/rein builds it), a durable detector
// consumer that lags, one dead letter, and the test conversations.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	js := testutil.StartJetStream(t, "")
	reg := prometheus.NewRegistry()
	f := &fixture{
		js:  js,
		pub: streams.NewPublisher(js.JS, reg, streams.PublisherConfig{}),
		reg: reg,
		decisions: telemetry.NewCounterVec(reg, telemetry.MDetectorDecisions,
			"Detections by outcome (activated, clear, failed), per tenant.", "tenant", "outcome"),
		activations: telemetry.NewCounterVec(reg, telemetry.MDetectorActivations,
			"Activations by detected error type, per tenant.", "tenant", "error_type"),
	}
	reg.MustRegister(telemetry.NewJetStreamCollector(js.JS, natsserver.StreamNames))
	for _, c := range []struct {
		tenant, outcome string
		n               float64
	}{{"acme", "activated", 3}, {"acme", "clear", 5}, {"acme", "failed", 1}, {"globex", "activated", 1}, {"globex", "clear", 2}} {
		f.decisions.WithLabelValues(c.tenant, c.outcome).Add(c.n)
	}
	for _, c := range []struct {
		tenant, errorType string
		n                 float64
	}{{"acme", "unsupported_parameter", 2}, {"acme", "anaphora", 1}, {"globex", "multiple_interpretation", 1}} {
		f.activations.WithLabelValues(c.tenant, c.errorType).Add(c.n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.JS.CreateOrUpdateConsumer(ctx, bus.StreamTurns, jetstream.ConsumerConfig{
		Durable: bus.DurableDetector, FilterSubject: bus.UserTurnsAll, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatalf("create consumer: %v", err)
	}
	if err := streams.PublishDeadLetter(ctx, f.pub, bus.StageDetector, bus.StreamTurns, 7, 1,
		bus.TurnSubject(tenant, "conv-9", schemas.RoleUser), nil, []byte("{not json"), "undecodable: not a CloudEvent"); err != nil {
		t.Fatalf("dead letter: %v", err)
	}
	f.publishConversation(ctx, t)
	return f
}

func (f *fixture) publish(ctx context.Context, t *testing.T, stream, subject, typ, id string, m schemas.Meta, data any) {
	t.Helper()
	ev, err := schemas.NewEvent(typ, id, "", m, data)
	if err != nil {
		t.Fatalf("event %s: %v", id, err)
	}
	if _, err := f.pub.Publish(ctx, stream, subject, &ev); err != nil {
		t.Fatalf("publish %s: %v", id, err)
	}
}

func (f *fixture) publishConversation(ctx context.Context, t *testing.T) {
	t.Helper()
	turn := func(c string, n int, role, text string) {
		f.publish(ctx, t, bus.StreamTurns, bus.TurnSubject(tenant, c, role), schemas.TypeTurn,
			fmt.Sprintf("turn-%s-%s-%d-%s", tenant, c, n, role), schemas.Meta{Tenant: tenant, Conversation: c, Turn: n},
			schemas.Turn{Role: role, Text: text, Turn: n})
	}
	m := func(n int) schemas.Meta { return schemas.Meta{Tenant: tenant, Conversation: conv, Turn: n} }
	step := func(n, i int, kind, name string, args any, output string, injected bool) {
		var raw json.RawMessage
		if args != nil {
			raw, _ = json.Marshal(args)
		}
		f.publish(ctx, t, bus.StreamSteps, bus.StepSubject(tenant, conv), schemas.TypeStep,
			fmt.Sprintf("step-%s-%s-%d-%d", tenant, conv, n, i), m(n),
			schemas.Step{Turn: n, Step: i, Kind: kind, Name: name, CallID: fmt.Sprintf("call-%d-%d", n, i), Arguments: raw, Output: output, Injected: injected})
	}
	detection := func(n int, d schemas.Detection) {
		f.publish(ctx, t, bus.StreamDetections, bus.DetectionSubject(tenant, conv), schemas.TypeDetection,
			fmt.Sprintf("detector-%s-%s-%d", tenant, conv, n), m(n), d)
	}
	task := func(n int, text string, inc *schemas.Inception) {
		f.publish(ctx, t, bus.StreamTasks, bus.TaskSubject(tenant, conv), schemas.TypeTask,
			fmt.Sprintf("injector-%s-%s-%d", tenant, conv, n), m(n),
			schemas.Task{Turn: n, UserText: text, DetectionID: fmt.Sprintf("detector-%s-%s-%d", tenant, conv, n), Inception: inc})
	}

	// Turn 1: nothing detected.
	first := "Hi, I need help with my reservation ABC123."
	turn(conv, 1, schemas.RoleUser, first)
	detection(1, schemas.Detection{Turn: 1, UserText: first, Module: "llm", Model: "sim", LatencyMS: 41, Tokens: 300, TaxonomyVersion: "1"})
	task(1, first, nil)
	step(1, 0, schemas.StepReply, "", nil, "Sure, what would you like to change?", false)
	turn(conv, 1, schemas.RoleAgent, "Sure, what would you like to change?")

	// Turn 2: an unsupported parameter; rein plants a thought and the agent escalates.
	turn(conv, 2, schemas.RoleUser, hostileText)
	detection(2, schemas.Detection{Turn: 2, UserText: hostileText, Rein: true, ErrorType: "unsupported_parameter",
		Category: schemas.CategoryUnsupported, RecoveryTool: schemas.ToolTransfer, Evidence: "first class",
		Reasoning: "first class is not a cabin the tools accept", Module: "llm", Model: "sim", LatencyMS: 57, Tokens: 420, TaxonomyVersion: "1"})
	task(2, hostileText, &schemas.Inception{Thought: plantedText, ErrorType: "unsupported_parameter", RecoveryTool: schemas.ToolTransfer})
	step(2, 0, schemas.StepThink, schemas.ToolThink, map[string]string{"thought": plantedText}, "", true)
	step(2, 1, schemas.StepToolResult, schemas.ToolThink, nil, "", true)
	step(2, 2, schemas.StepToolCall, schemas.ToolTransfer, map[string]string{"summary": escSummary}, "", false)
	step(2, 3, schemas.StepToolResult, schemas.ToolTransfer, nil, "Transfer successful", false)
	f.publish(ctx, t, bus.StreamOutcomes, bus.EscalationSubject(tenant, conv), schemas.TypeEscalation,
		fmt.Sprintf("escalation-%s-%s-2", tenant, conv), m(2),
		schemas.Escalation{Turn: 2, Summary: escSummary, ErrorType: "unsupported_parameter", Reason: schemas.ReasonTransfer,
			DetectionID: fmt.Sprintf("detector-%s-%s-2", tenant, conv), Thought: plantedText})
	turn(conv, 2, schemas.RoleAgent, "I'm transferring you to a human agent now.")

	// Another conversation with an ambiguity report.
	turn("conv-2", 1, schemas.RoleUser, "Cancel that one.")
	f.publish(ctx, t, bus.StreamOutcomes, bus.ReportSubject(tenant, "conv-2"), schemas.TypeReport,
		"report-acme-conv-2-1", schemas.Meta{Tenant: tenant, Conversation: "conv-2", Turn: 1},
		schemas.Report{Turn: 1, Report: reportText, ErrorType: "anaphora"})
}

// serve mounts the dashboard and /metrics (promhttp on the same registry)
// on an httptest server. It reveals free text (the tests read it); see
// serveWith for the default, redacted view.
func (f *fixture) serve(t *testing.T, cfg Config) (*Dashboard, *httptest.Server) {
	t.Helper()
	return f.serveWith(t, cfg, func(*http.Request) bool { return true })
}

// serveWith is serve with the given Deps.Reveal.
func (f *fixture) serveWith(t *testing.T, cfg Config, reveal func(*http.Request) bool) (*Dashboard, *httptest.Server) {
	t.Helper()
	d, err := New(cfg, Deps{JS: f.js.JS, Gatherer: f.reg, Reveal: reveal})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(f.reg, promhttp.HandlerOpts{}))
	d.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return d, srv
}

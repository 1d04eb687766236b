package pipeline

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/reinception/rein/agentworker"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/llm"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// Every goroutine Start and Run begin stops once the process is closed.
func TestMain(m *testing.M) { rtest.VerifyNoLeaks(m) }

// startProcess starts a process on an embedded server in a directory of
// its own, without an HTTP listener, closed when the test ends.
func startProcess(t *testing.T, dir string) *Process {
	t.Helper()
	rt, err := Start(t.Context(), processConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	return rt
}

func processConfig(dir string) Config {
	return Config{Name: "rein-test", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DataDir: dir,
		MaxEventBytes: streams.DefaultMaxEventBytes, Provision: natsserver.DefaultProvision()}
}

// rulesStages are stages that need no model: the rules module and, unless
// the test gives one, the agent worker in sidecar mode.
func rulesStages() Stages {
	return Stages{
		Modules:     Modules{Module: inception.ModuleRules, Plan: planted.PlanTemplate},
		AgentWorker: agentworker.Config{Backend: agentworker.BackendNone},
	}
}

func TestTableListsEveryStageOnceInDataFlowOrder(t *testing.T) {
	want := []string{bus.StageDetector, bus.StageInjector, bus.StageAgentWorker, bus.StageEscalation}
	if got := StageOrder(); !slices.Equal(got, want) {
		t.Fatalf("stage order %v, want %v", got, want)
	}
	durables := map[string]string{
		bus.StageDetector:    bus.DurableDetector,
		bus.StageAgentWorker: bus.DurableAgentWorker,
		bus.StageEscalation:  bus.DurableEscalation,
	}
	rt := startProcess(t, t.TempDir())
	s := rulesStages()
	// What the stages before a row store: the turns come from the ingress.
	stored := []string{bus.StreamTurns}
	for _, st := range table {
		if !slices.Contains(natsserver.Identities, st.identity) {
			t.Errorf("%s: identity %q is not one the server knows", st.name, st.identity)
		}
		if !slices.Contains(stored, st.input) {
			t.Errorf("%s consumes %s, which no stage before it stores (%v): the table is out of data-flow order", st.name, st.input, stored)
		}
		l, err := rt.stageLink(st.name, st.identity)
		if err != nil {
			t.Fatal(err)
		}
		r, err := st.build(rt, &s, l)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		c, ok := r.(interface{ ConsumerConfig() consume.ConsumerConfig })
		if !ok {
			// The sidecar answers requests from the stream it reads.
			if st.name != bus.StageInjector {
				t.Errorf("%s has no durable consumer", st.name)
			}
			continue
		}
		cc := c.ConsumerConfig()
		if cc.Stage != st.name || cc.Stream != st.input || cc.Durable != durables[st.name] {
			t.Errorf("%s: table says input %s; its consumer is stage %s on %s, durable %s (streams/bus: %s)",
				st.name, st.input, cc.Stage, cc.Stream, cc.Durable, durables[st.name])
		}
		stored = append(stored, cc.Outputs...)
	}
}

func TestResolveStages(t *testing.T) {
	for _, tc := range []struct {
		req  []string
		want []string
	}{
		{[]string{"all"}, StageOrder()},
		{[]string{"none"}, nil},
		{[]string{" agentworker", "detector", "agentworker"}, []string{"agentworker", "detector"}},
		{[]string{"escalation", "all"}, []string{"escalation", "detector", "injector", "agentworker"}},
	} {
		got, err := ResolveStages(tc.req)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ResolveStages(%q) = %v, %v; want %v", tc.req, got, err, tc.want)
		}
	}
	if _, err := ResolveStages([]string{"detecter"}); err == nil || !strings.Contains(err.Error(), "known: detector, injector, agentworker, escalation") {
		t.Errorf("an unknown stage: %v", err)
	}
	if _, err := rows([]string{"ingress"}); !errors.Is(err, streams.ErrInvalidConfig) {
		t.Errorf("Run of a stage the table does not have: %v", err)
	}
}

// runFunc is a stage made of its Run.
type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// fakeRow is a row of the table whose stage is run.
func fakeRow(name string, run runFunc) stage {
	return stage{name: name, input: bus.StreamTurns, identity: name,
		build: func(*Process, *Stages, link) (runner, error) { return run, nil }}
}

func TestRunStopsEveryStageWhenOneFails(t *testing.T) {
	rt := startProcess(t, t.TempDir())
	boom := errors.New("boom")
	stopped := make(chan struct{})
	sel := []stage{
		fakeRow(bus.StageDetector, func(ctx context.Context) error { <-ctx.Done(); close(stopped); return ctx.Err() }),
		fakeRow(bus.StageEscalation, func(context.Context) error { return boom }),
	}
	err := rt.run(context.Background(), &Stages{}, sel)
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "stage escalation") {
		t.Fatalf("Run = %v, want the escalation stage's failure", err)
	}
	select {
	case <-stopped:
	default:
		t.Fatal("Run returned before the detector stopped")
	}
}

func TestRunBuildsEveryStageBeforeRunningAny(t *testing.T) {
	rt := startProcess(t, t.TempDir())
	ran := false
	bad := errors.New("bad config")
	sel := []stage{
		fakeRow(bus.StageDetector, func(context.Context) error { ran = true; return nil }),
		{name: bus.StageAgentWorker, input: bus.StreamTasks, identity: natsserver.IdentityAgentWorker,
			build: func(*Process, *Stages, link) (runner, error) { return nil, bad }},
	}
	if err := rt.run(context.Background(), &Stages{}, sel); !errors.Is(err, bad) || !strings.Contains(err.Error(), "stage agentworker") {
		t.Fatalf("Run = %v, want the agent worker's build error", err)
	}
	if ran {
		t.Fatal("a stage ran although another could not be built")
	}
}

// A stage that returns context.Canceled because shutdown cut its start
// short has not failed.
func TestRunCancelledIsNoFailure(t *testing.T) {
	rt := startProcess(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	sel := []stage{fakeRow(bus.StageDetector, func(ctx context.Context) error { close(started); <-ctx.Done(); return ctx.Err() })}
	done := make(chan error, 1)
	go func() { done <- rt.run(ctx, &Stages{}, sel) }()
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v", err)
	}
}

// recordingModel is the agent's model: it answers every call with a reply
// and records the system prompts it was given.
type recordingModel struct {
	mu      sync.Mutex
	systems []string
}

func (m *recordingModel) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.systems = append(m.systems, req.System)
	return llm.Response{Content: "Your booking is confirmed."}, nil
}
func (m *recordingModel) Provider() string { return "test" }
func (m *recordingModel) Model() string    { return "recording" }

func (m *recordingModel) prompts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.systems)
}

// Every stage runs from the table: a user turn gets the agent's reply,
// with the system prompt the caller gave (not the sample airline policy),
// and cancelling drains every stage, so that Run returns nil. The same
// holds when the stages reach the embedded server on its loopback port,
// and then the server sees them there, not in process.
func TestRunAnswersATurnAndDrainsOnCancel(t *testing.T) {
	for _, conn := range []string{StageConnInProcess, StageConnLoopback, StageConnBarePipe} {
		t.Run(conn, func(t *testing.T) {
			cfg := processConfig(t.TempDir())
			cfg.StageConn = conn
			if conn == StageConnLoopback {
				cfg.Listen = "127.0.0.1:0"
			}
			rt, err := Start(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rt.Close)
			runAnswersATurn(t, rt)
			// Every stage's connection and the process's own are where
			// the setting says.
			cz, err := rt.srv.Connz(&server.ConnzOptions{})
			if err != nil {
				t.Fatal(err)
			}
			stagesSeen := 0
			for _, c := range cz.Conns {
				if !strings.HasPrefix(c.Name, cfg.Name) {
					continue
				}
				if strings.HasPrefix(c.Name, cfg.Name+"-") {
					stagesSeen++
				}
				if tcp := c.Port != 0; tcp != (conn == StageConnLoopback) {
					t.Errorf("%s: connection %q at %s:%d, want it on the loopback port: %v", conn, c.Name, c.IP, c.Port, conn == StageConnLoopback)
				}
			}
			if stagesSeen == 0 {
				t.Fatalf("%s: the server lists no stage connection (%d connections)", conn, len(cz.Conns))
			}
		})
	}
}

func runAnswersATurn(t *testing.T, rt *Process) {
	t.Helper()
	model := &recordingModel{}
	s := rulesStages()
	s.AgentWorker = agentworker.Config{SystemPrompt: "You are the test agent."}
	s.Given.AgentModel = model
	replies := make(chan *nats.Msg, 4)
	sub, err := rt.NC.ChanSubscribe(bus.TurnSubject("acme", "*", schemas.RoleAgent), replies)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx, s, StageOrder()) }()

	meta := schemas.Meta{Tenant: "acme", Conversation: "c1", Turn: 1}
	ev, err := schemas.BuildEvent(schemas.TypeTurn, schemas.EventID("turn", "acme", "c1", 1)+"-user", "/test", meta,
		schemas.Turn{Role: schemas.RoleUser, Text: "What is the status of my booking?", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject("acme", "c1", schemas.RoleUser), &ev); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-replies:
		if !strings.Contains(string(m.Data), "Your booking is confirmed.") {
			t.Fatalf("agent reply %s", m.Data)
		}
	case err := <-done:
		t.Fatalf("Run ended before the reply: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no agent reply within 30s")
	}
	if p := model.prompts(); len(p) == 0 || p[0] != "You are the test agent." {
		t.Fatalf("the agent's model saw system prompts %.60q, want the one given", p)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after cancel = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of cancel")
	}
}

// A Start that fails after the embedded server and the HTTP port are up
// releases them: the port is closed and the data directory can be used
// again (its lock is released).
func TestStartReleasesWhatItStartedWhenItFails(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg := processConfig(dir)
	cfg.HTTPAddr = addr
	// The label monitor is the last thing Start builds.
	cfg.LabelMonitor = labels.MonitorConfig{Floor: 2}
	if _, err := Start(t.Context(), cfg); !errors.Is(err, labels.ErrBadLabel) {
		t.Fatalf("Start = %v, want the label monitor's error", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("the HTTP port %s still listens after a failed Start", addr)
	}
	startProcess(t, dir)
}

// A stage connection the process cannot honour is refused at start, not
// quietly replaced by the other kind.
func TestStageConnRefusesWhatItCannotHonour(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown", Config{StageConn: "tcp", Listen: "127.0.0.1:0"}, `want in-process, loopback or pipe`},
		{"external NATS", Config{StageConn: StageConnLoopback, Listen: "127.0.0.1:0", Connect: natsserver.ConnectConfig{URL: "nats://127.0.0.1:4222"}}, "only the embedded server"},
		{"TLS port", Config{StageConn: StageConnLoopback, Listen: "127.0.0.1:0", NATSTLSCert: "cert.pem"}, "requires TLS"},
		{"no listener", Config{StageConn: StageConnLoopback}, "loopback address"},
		{"wildcard listener", Config{StageConn: StageConnLoopback, Listen: "0.0.0.0:4222"}, "loopback address"},
	} {
		if _, _, err := stageConn(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: stageConn = %v, want an error saying %q", c.name, err, c.want)
		}
	}
	for _, cfg := range []Config{{}, {StageConn: StageConnInProcess, Listen: "0.0.0.0:4222"}, {StageConn: StageConnBarePipe}, {StageConn: StageConnLoopback, Listen: "localhost:4222"}} {
		if _, _, err := stageConn(cfg); err != nil {
			t.Errorf("stageConn(%q, listen %q) = %v, want it accepted", cfg.StageConn, cfg.Listen, err)
		}
	}
}

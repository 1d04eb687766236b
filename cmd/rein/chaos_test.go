package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/agentworker"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// The chaos test: `rein serve` as a real process on a real data directory,
// a scripted agent whose model calls take time, user turns published in
// rounds while the process is killed with SIGKILL and restarted several
// times. Afterwards every user turn has exactly one detection and exactly
// one agent outcome, no output stream holds an event twice, and each
// conversation's outcomes are stored in turn order.
//
// Short by default (CI). Longer runs, for release checks:
//
//	REIN_CHAOS_CYCLES=100 REIN_CHAOS_CONVERSATIONS=200 REIN_CHAOS_TURNS=10 \
//	  go test -run Chaos -timeout 2h ./cmd/rein/
//
// REIN_CHAOS_SEED replays a run's kill schedule; REIN_CHAOS_BIN tests a
// prebuilt binary (e.g. an older build) instead of building this one
// (with REIN_CHAOS_ACK_WAIT=default for a build without --ack-wait). The
// build before the order gate and the explicit outcomes fails it: turns of
// killed holders end with no reply and no record.
func TestChaosKillNineKeepsOneOutcomePerTurn(t *testing.T) {
	t.Parallel()
	cycles, convs, turns := envInt("REIN_CHAOS_CYCLES", 5), envInt("REIN_CHAOS_CONVERSATIONS", 40), envInt("REIN_CHAOS_TURNS", 8)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REIN_CHAOS_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("chaos: %d kill -9 cycles, %d conversations × %d turns, seed %d", cycles, convs, turns, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	bin := chaosBinary(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(script, []byte(chaosAgentScript), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &chaosServer{t: t, bin: bin, dataDir: filepath.Join(dir, "data"), natsAddr: freePort(t), httpAddr: freePort(t), script: script}
	// The server's identities, made before it starts so that the test
	// connects as admin from the first moment (serve keeps existing keys).
	if _, err := natsserver.EnsureKeyring(srv.dataDir); err != nil {
		t.Fatal(err)
	}
	srv.start()
	t.Cleanup(srv.kill)

	// Kill points: after which rounds (a round publishes one turn of every
	// conversation), and how long into the next one.
	kills := map[int][]time.Duration{}
	for i := 0; i < cycles; i++ {
		r := rng.IntN(turns)
		kills[r] = append(kills[r], time.Duration(rng.IntN(400))*time.Millisecond)
	}
	killed := 0
	for turn := 1; turn <= turns; turn++ {
		for c := 0; c < convs; c++ {
			srv.publish(fmt.Sprintf("c%03d", c), turn)
		}
		for _, after := range kills[turn-1] {
			select {
			case <-time.After(after): // let turns get half-way through
			case <-t.Context().Done():
				return
			}
			srv.kill()
			killed++
			srv.start()
		}
	}
	t.Logf("chaos: %d turns published, %d kill -9 cycles done", convs*turns, killed)

	total := convs * turns
	// Wait for every turn to settle; past the deadline, report what is
	// missing rather than only that something is.
	var got chaosOutcomes
	for deadline := time.Now().Add(3 * time.Minute); ; {
		got = srv.read()
		if len(got.outcomes) >= total && len(got.detections) >= total {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("not every turn settled within 3m: %d of %d with an outcome, %d with a detection", len(got.outcomes), total, len(got.detections))
			break
		}
		select {
		case <-time.After(250 * time.Millisecond): // poll interval
		case <-t.Context().Done():
			return
		}
	}
	var problems []string
	for c := 0; c < convs; c++ {
		conv := fmt.Sprintf("c%03d", c)
		var seqs []uint64
		for turn := 1; turn <= turns; turn++ {
			k := chaosKey{conv, turn}
			if n := got.detections[k]; n != 1 {
				problems = append(problems, fmt.Sprintf("%s turn %d: %d detections", conv, turn, n))
			}
			o := got.outcomes[k]
			if len(o) != 1 {
				problems = append(problems, fmt.Sprintf("%s turn %d: %d agent outcomes %v (%d tasks stored); %s", conv, turn, len(o), o, got.tasks[k], srv.describe(conv, got)))
				continue
			}
			seqs = append(seqs, o[0].seq)
		}
		if !slices.IsSorted(seqs) {
			problems = append(problems, fmt.Sprintf("%s: outcomes stored out of turn order (sequences %v)", conv, seqs))
		}
	}
	problems = append(problems, got.duplicates...)
	if got.deadLetters > 0 {
		problems = append(problems, fmt.Sprintf("%d dead letters", got.deadLetters))
	}
	if len(problems) > 0 {
		logConsumers(t, srv.js)
		t.Fatalf("seed %d: %d problems, first ones:\n%s", seed, len(problems), strings.Join(problems[:min(20, len(problems))], "\n"))
	}
	t.Logf("chaos: %d turns, each with one detection and one outcome, in order; %d superseded", total, got.superseded)
}

// chaosAgentScript: two model calls per turn, each taking 100 ms, so that
// a kill lands with turns half-way through.
const chaosAgentScript = `name: chaos-agent
description: One tool call per turn, 100 ms per model call (simulator).
think_tool: think
rules:
  - name: lookup
    when: {purpose: agent, last_role: user}
    latency: 100ms
    respond:
      tool_calls:
        - name: get_reservation_details
          arguments: {reservation_id: Q7RM2K}
  - name: reply
    when: {purpose: agent, last_tool: get_reservation_details}
    latency: 100ms
    respond:
      content: 'Your reservation Q7RM2K is confirmed.'
default:
  respond: {content: 'Done.'}
`

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// chaosBinary is this tree's rein (reinBinary) or REIN_CHAOS_BIN.
func chaosBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("REIN_CHAOS_BIN"); bin != "" {
		return bin
	}
	return reinBinary(t)
}

type chaosServer struct {
	t                    *testing.T
	bin, dataDir, script string
	natsAddr, httpAddr   string
	cmd                  *exec.Cmd
	nc                   *nats.Conn
	js                   jetstream.JetStream
	pub                  *streams.Publisher
}

// start runs `rein serve` and waits until it is ready and connected.
func (s *chaosServer) start() {
	s.t.Helper()
	args := []string{"serve", "--data-dir", s.dataDir, "--nats-listen", s.natsAddr, "--http", s.httpAddr,
		"--agent-script", s.script, "--log-level", cmp.Or(os.Getenv("REIN_CHAOS_LOG_LEVEL"), "error")}
	// A short ack wait: a killed holder's turns come back in seconds.
	// REIN_CHAOS_ACK_WAIT=default leaves the stages' own (for a binary
	// older than the flag).
	if aw := cmp.Or(os.Getenv("REIN_CHAOS_ACK_WAIT"), "2s"); aw != "default" {
		args = append(args, "--ack-wait", aw)
	}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	rtest.CheckFor(s.t, 60*time.Second, "rein serve ready", func() bool {
		resp, err := http.Get("http://" + s.httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	s.connect()
}

// connect is the one place the test connects to rein's bus.
func (s *chaosServer) connect() {
	s.t.Helper()
	key, err := nats.NkeyOptionFromSeed(natsserver.SeedFile(s.dataDir, natsserver.IdentityAdmin))
	if err != nil {
		s.t.Fatalf("rein's admin key: %v", err)
	}
	nc, err := nats.Connect("nats://"+s.natsAddr, key, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		s.t.Fatal(err)
	}
	s.nc, s.js, s.pub = nc, js, streams.NewPublisher(js, nil, streams.PublisherConfig{})
}

// kill sends SIGKILL and reaps the process.
func (s *chaosServer) kill() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
	if s.nc != nil {
		s.nc.Close()
		s.nc = nil
	}
}

// publish stores one user turn, retrying until it is stored (a publish
// that fails while the server restarts is sent again: its derived id
// drops a second copy).
func (s *chaosServer) publish(conv string, turn int) {
	s.t.Helper()
	meta := schemas.Meta{Tenant: "chaos", Conversation: conv, Turn: turn}
	ev, err := schemas.NewEvent(schemas.TypeTurn, "platform-"+conv+"-"+strconv.Itoa(turn), "/chaos", meta,
		schemas.Turn{Role: schemas.RoleUser, Text: "Can you show me reservation Q7RM2K?", Turn: turn})
	if err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		msg, err := streams.Encode(bus.TurnSubject("chaos", conv, schemas.RoleUser), &ev)
		if err != nil {
			s.t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err = streams.PublishTurn(ctx, s.pub, msg)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("publish %s turn %d: %v", conv, turn, err)
		}
	}
}

type chaosKey struct {
	conv string
	turn int
}

type chaosOutcome struct {
	kind string
	seq  uint64
}

type chaosOutcomes struct {
	detections  map[chaosKey]int
	tasks       map[chaosKey]int
	order       map[string][]string // conversation → its detections, tasks and outcomes in stream order (report)
	outcomes    map[chaosKey][]chaosOutcome
	duplicates  []string
	deadLetters int
	superseded  int
}

// read reads every output stream of the run.
func (s *chaosServer) read() chaosOutcomes {
	s.t.Helper()
	got := chaosOutcomes{detections: map[chaosKey]int{}, tasks: map[chaosKey]int{}, outcomes: map[chaosKey][]chaosOutcome{}, order: map[string][]string{}}
	ctx := context.Background()
	each := func(stream string, filters []string, fn func(r streams.Raw, k chaosKey)) {
		ids := map[string]bool{}
		err := streams.ReadStream(ctx, s.js, stream, streams.ReadOptions{Filters: filters}, func(r streams.Raw) error {
			if r.Decoded == nil {
				got.duplicates = append(got.duplicates, fmt.Sprintf("%s #%d undecodable", stream, r.Sequence))
				return nil
			}
			if id := r.Decoded.Event.ID(); ids[id] {
				got.duplicates = append(got.duplicates, fmt.Sprintf("%s holds %s twice", stream, id))
			} else {
				ids[id] = true
			}
			k := chaosKey{r.Decoded.Meta.Conversation, r.Decoded.Meta.Turn}
			if typ := r.Decoded.Event.Type(); typ != schemas.TypeStep {
				got.order[k.conv] = append(got.order[k.conv], fmt.Sprintf("%s#%d:%d", strings.TrimPrefix(typ, "dev.rein."), r.Sequence, k.turn))
			}
			fn(r, k)
			return nil
		})
		if err != nil {
			s.t.Logf("read %s: %v", stream, err)
		}
	}
	each(bus.StreamDetections, nil, func(_ streams.Raw, k chaosKey) { got.detections[k]++ })
	each(bus.StreamTasks, nil, func(_ streams.Raw, k chaosKey) { got.tasks[k]++ })
	each(bus.StreamSteps, nil, func(streams.Raw, chaosKey) {})
	each(bus.StreamTurns, []string{bus.TurnSubject("chaos", "*", schemas.RoleAgent)}, func(r streams.Raw, k chaosKey) {
		got.outcomes[k] = append(got.outcomes[k], chaosOutcome{"reply", r.Sequence})
	})
	each(bus.StreamOutcomes, nil, func(r streams.Raw, k chaosKey) {
		switch r.Decoded.Event.Type() {
		case schemas.TypeEscalation:
			got.outcomes[k] = append(got.outcomes[k], chaosOutcome{"escalation", r.Sequence})
		case schemas.TypeUnanswered:
			got.outcomes[k] = append(got.outcomes[k], chaosOutcome{"unanswered", r.Sequence})
			got.superseded++
		}
	})
	if st, err := s.js.Stream(ctx, bus.StreamDLQ); err == nil {
		if info, err := st.Info(ctx); err == nil {
			got.deadLetters = int(info.State.Msgs)
		}
	}
	return got
}

// describe is what a failed run reports of a conversation: its outputs in
// each stream's order (type#sequence:turn) and the agent worker's stored
// state (the turn it is at, whether done, the turns it remembers finished).
func (s *chaosServer) describe(conv string, got chaosOutcomes) string {
	st, ok, err := agentworker.LoadState(context.Background(), s.js, "chaos", conv)
	state := "no agent state"
	switch {
	case err != nil:
		state = "agent state: " + err.Error()
	case ok:
		state = fmt.Sprintf("agent state: turn %d, done %v, outcome %q, finished %v", st.Turn, st.TurnDone, st.Outcome, st.Recent)
	}
	return fmt.Sprintf("stored %v; %s", got.order[conv], state)
}

package main

// TestChaosKillRestart complements TestChaosKillNineKeepsOneOutcomePerTurn
// (chaos_test.go): turns are published while the kills happen, across
// three tenants, and every reply must answer exactly its own turn in
// context ("reply N to: <text of turn N>"). The server runs with a 3 s ack
// wait so a crashed holder's turns come back quickly.
//
// The chaos test proves rein's first promise (DESIGN.md §8, "one outcome
// per user turn") against the real binary: it runs `rein serve` as a
// subprocess on an embedded JetStream with file storage, publishes user
// turns of many conversations across several tenants over NATS while it
// kills the process with SIGKILL and restarts it on the same data dir at
// seeded random points, waits until the pipeline has settled, and then
// reads the streams back and checks every turn.
//
// It talks to rein only through its command line, its HTTP port (/readyz,
// /metrics) and NATS, so it does not depend on how cmd/rein is organised.
//
// Short by default (go test -run Chaos ./cmd/rein); the long run and the
// knobs (all optional):
//
//	REIN_KR_TURNS=2000 REIN_KR_CONVERSATIONS=200 REIN_KR_CYCLES=100 \
//	  go test -run Chaos -timeout 60m ./cmd/rein
//
//	REIN_KR_SEED      seed of the publish order and of the kill points (default: the clock; logged)
//	REIN_KR_LATENCY   the scripted agent's latency per model call (default 200ms)
//	REIN_KR_RATE      user turns published per second (default 40)
//	REIN_KR_BIN       a prebuilt rein binary to run instead of building this tree
//	REIN_KR_SETTLE    how long the pipeline may take to settle after the last restart (default 5m)

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// chaosConfig is one run's shape.
type chaosConfig struct {
	turns, convs, cycles int
	seed                 uint64
	latency              time.Duration
	rate                 float64
	settle               time.Duration
	bin                  string
}

func chaosConfigFromEnv(t *testing.T) chaosConfig {
	t.Helper()
	c := chaosConfig{turns: 600, cycles: 5, latency: 200 * time.Millisecond, rate: 40, settle: 5 * time.Minute,
		seed: uint64(time.Now().UnixNano())}
	num := func(name string, dst *int) {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				t.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*dst = n
		}
	}
	dur := func(name string, dst *time.Duration) {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				t.Fatalf("%s=%q: want a duration like 200ms", name, v)
			}
			*dst = d
		}
	}
	num("REIN_KR_TURNS", &c.turns)
	num("REIN_KR_CYCLES", &c.cycles)
	c.convs = max(1, c.turns/10)
	num("REIN_KR_CONVERSATIONS", &c.convs)
	dur("REIN_KR_LATENCY", &c.latency)
	dur("REIN_KR_SETTLE", &c.settle)
	if v := os.Getenv("REIN_KR_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REIN_KR_SEED=%q: want an unsigned integer", v)
		}
		c.seed = s
	}
	if v := os.Getenv("REIN_KR_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			t.Fatalf("REIN_KR_RATE=%q: want a positive number", v)
		}
		c.rate = r
	}
	c.bin = os.Getenv("REIN_KR_BIN")
	if c.convs > c.turns {
		c.convs = c.turns
	}
	return c
}

// chaosTurn is one user turn the test publishes.
type chaosTurn struct {
	tenant, conv string
	turn         int
}

func (u chaosTurn) text() string {
	return fmt.Sprintf("chaos %s %s says hello for the %d. time", u.tenant, u.conv, u.turn)
}
func (u chaosTurn) key() string { return u.tenant + "/" + u.conv + "/" + strconv.Itoa(u.turn) }

// chaosPlan spreads turns over conversations of three tenants and orders
// them randomly across conversations, in order within each.
func chaosPlan(c chaosConfig, rng *rand.Rand) []chaosTurn {
	tenants := []string{"acme", "globex", "initech"}
	left := make([]int, c.convs)
	for i := range c.turns {
		left[i%c.convs]++
	}
	next := make([]int, c.convs)
	open := make([]int, c.convs)
	for i := range open {
		open[i] = i
	}
	plan := make([]chaosTurn, 0, c.turns)
	for len(open) > 0 {
		k := rng.IntN(len(open))
		i := open[k]
		next[i]++
		plan = append(plan, chaosTurn{tenant: tenants[i%len(tenants)], conv: fmt.Sprintf("chaos-%04d", i), turn: next[i]})
		if next[i] == left[i] {
			open = slices.Delete(open, k, k+1)
		}
	}
	return plan
}

// krAgentScript is the scripted agent: one model call per turn, after
// the given latency, answering with the number of user messages it saw and
// the last one, so a reply proves which context its turn ran on.
func krAgentScript(latency time.Duration) string {
	return fmt.Sprintf(`# chaos test agent: a deterministic simulator (internal/llm/doc.go), not a model.
name: chaos-agent
default:
  latency: %s
  respond:
    content: 'reply {{.turn}} to: {{.last_user}}'
`, latency)
}

func chaosExpectedReply(u chaosTurn) string { return fmt.Sprintf("reply %d to: %s", u.turn, u.text()) }

func TestChaosKillRestart(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("chaos test: starts and kills rein serve repeatedly")
	}
	cfg := chaosConfigFromEnv(t)
	t.Logf("chaos: seed %d (REIN_KR_SEED=%d reproduces the publish order and kill points), %d turns over %d conversations, %d kill/restart cycles, agent latency %s, %.0f turns/s",
		cfg.seed, cfg.seed, cfg.turns, cfg.convs, cfg.cycles, cfg.latency, cfg.rate)

	dir := t.TempDir()
	bin := cfg.bin
	if bin == "" {
		bin = reinBinary(t)
	} else {
		t.Logf("chaos: running the prebuilt binary %s", bin)
	}
	script := filepath.Join(dir, "chaos-agent.yaml")
	if err := os.WriteFile(script, []byte(krAgentScript(cfg.latency)), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := &krServer{t: t, bin: bin, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "serve.log"),
		nats: chaosFreeAddr(t), http: chaosFreeAddr(t), script: script}
	// The server's identities, made before it starts so that the test
	// connects as admin from the first moment (serve keeps existing keys).
	if _, err := natsserver.EnsureKeyring(srv.dataDir); err != nil {
		t.Fatal(err)
	}
	srv.start()
	t.Cleanup(srv.kill)
	defer func() {
		if t.Failed() {
			srv.dumpLog(60)
		}
	}()

	nc := chaosConnect(t, "nats://"+srv.nats, srv.dataDir)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(cfg.seed, 0x6368616f73))
	plan := chaosPlan(cfg, rng)
	// Kill points: after how many published turns each cycle kills; the
	// last few may fall after publishing ended, while the backlog drains.
	kills := make([]int, cfg.cycles)
	for i := range kills {
		kills[i] = 1 + rng.IntN(len(plan)+len(plan)/10)
	}
	slices.Sort(kills)

	// Publish in a goroutine, paced, retrying a turn across restarts.
	var published atomic.Int64
	pubDone := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { pubDone <- chaosPublish(ctx, js, plan, cfg.rate, &published) }()

	start := time.Now()
	var holds chaosHolds
	lastStart := start
	for i, at := range kills {
		if !chaosWait(10*time.Minute, func() bool {
			return published.Load() >= int64(min(at, len(plan))) || chaosDone(pubDone)
		}) {
			t.Fatalf("cycle %d: publishing stalled at %d of %d turns", i+1, published.Load(), len(plan))
		}
		holds.add(srv.metrics())
		srv.kill()
		t.Logf("chaos: cycle %d: killed (SIGKILL) after %d published turns, %s in", i+1, published.Load(), time.Since(start).Round(time.Millisecond))
		srv.start()
		lastStart = time.Now()
	}
	if err := <-pubDone; err != nil {
		t.Fatalf("publishing: %v", err)
	}
	t.Logf("chaos: all %d turns published, %d cycles done, %s in; waiting for the pipeline to settle", len(plan), cfg.cycles, time.Since(start).Round(time.Millisecond))

	settled := chaosSettle(js, cfg.settle)
	holds.add(srv.metrics())
	t.Logf("chaos: settled: %v, %s after the last restart", settled, time.Since(lastStart).Round(time.Millisecond))
	if !settled {
		t.Errorf("the pipeline did not settle within %s (REIN_KR_SETTLE); checking what is there", cfg.settle)
	}
	res := chaosCheck(t, js, plan)
	t.Logf("chaos summary: seed %d, %d turns over %d conversations and 3 tenants, %d kill -9/restart cycles, %s; replies %d, detections %d, tasks %d, escalations %d, reports %d, dead letters %d; order-gate holds %s",
		cfg.seed, len(plan), cfg.convs, cfg.cycles, time.Since(start).Round(time.Second),
		res.replies, res.detections, res.tasks, res.escalations, res.reports, res.dlq, holds)
}

// chaosConnect opens the test's one NATS connection, as the admin identity
// the embedded server generated in its data dir.
func chaosConnect(t *testing.T, url, dataDir string) *nats.Conn {
	t.Helper()
	key, err := nats.NkeyOptionFromSeed(natsserver.SeedFile(dataDir, natsserver.IdentityAdmin))
	if err != nil {
		t.Fatalf("rein's admin key: %v", err)
	}
	nc, err := nats.Connect(url, nats.Name("rein-chaos-test"), key,
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.RetryOnFailedConnect(true),
		nats.ReconnectBufSize(-1)) // no buffering while down: a publish fails and is retried
	if err != nil {
		t.Fatalf("connect to rein's NATS at %s: %v", url, err)
	}
	return nc
}

func chaosFreeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// krServer is the rein serve subprocess.
type krServer struct {
	t                                 *testing.T
	bin, dataDir, logPath, nats, http string
	script                            string
	args                              []string // rein serve's flags, when not the embedded server's above
	mu                                sync.Mutex
	cmd                               *exec.Cmd
	exited                            chan struct{}
	starts                            int
}

func (s *krServer) start() {
	s.t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	defer logf.Close()
	s.starts++
	fmt.Fprintf(logf, "==== chaos: start %d ====\n", s.starts)
	args := s.args
	if args == nil {
		args = []string{"--data-dir", s.dataDir, "--nats-listen", s.nats, "--http", s.http,
			"--agent-script", s.script, "--ack-wait", "3s", "--log-level", "info"}
	}
	cmd := exec.Command(s.bin, append([]string{"serve"}, args...)...)
	cmd.Env = chaosServeEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start rein serve: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	var exitedEarly bool
	ready := chaosWait(2*time.Minute, func() bool {
		select {
		case <-exited:
			exitedEarly = true
			return true
		default:
		}
		resp, err := http.Get("http://" + s.http + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if exitedEarly {
		s.dumpLog(40)
		s.t.Fatalf("rein serve (start %d) exited before it was ready: %v", s.starts, cmd.ProcessState)
	}
	if !ready {
		s.dumpLog(40)
		s.t.Fatalf("rein serve (start %d) not ready on %s within 2m", s.starts, s.http)
	}
}

// chaosServeEnv is the environment without REIN_* settings of whoever runs
// the test, so only the flags above configure the server.
func chaosServeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REIN_") {
			env = append(env, kv)
		}
	}
	return env
}

// kill sends SIGKILL (os.Process.Kill) and waits for the process to go.
func (s *krServer) kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// metrics reads /metrics; empty when the server does not answer.
func (s *krServer) metrics() string {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + s.http + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var b strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *krServer) dumpLog(n int) {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	s.t.Logf("last %d lines of rein serve's log:\n%s", n, strings.Join(lines[max(0, len(lines)-n):], "\n"))
}

// chaosHolds sums rein_stage_order_holds_total{stage,outcome} over the
// process's lives (each restart starts the counters at zero).
type chaosHolds map[string]float64

func (h *chaosHolds) add(metrics string) {
	if *h == nil {
		*h = chaosHolds{}
	}
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, "rein_stage_order_holds_total{") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil || v == 0 {
			continue
		}
		(*h)[line[len("rein_stage_order_holds_total"):sp]] += v
	}
}

func (h chaosHolds) String() string {
	if len(h) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %g", k, h[k])
	}
	return strings.Join(parts, ", ")
}

// chaosWait polls cond until it holds or within passes.
func chaosWait(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	wait := 5 * time.Millisecond
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		wait = min(2*wait, 250*time.Millisecond)
	}
}

func chaosDone(ch chan error) bool {
	select {
	case err := <-ch:
		ch <- err
		return true
	default:
		return false
	}
}

// chaosPublish publishes the plan at rate turns/s. A turn that fails —
// the server is down or restarting — is retried with the same event until
// it is stored; its derived id (turn.<tenant>.<conv>.<turn>.user) makes a
// retry of a turn that was in fact stored a duplicate JetStream drops.
func chaosPublish(ctx context.Context, js jetstream.JetStream, plan []chaosTurn, rate float64, published *atomic.Int64) error {
	every := time.Duration(float64(time.Second) / rate)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for _, u := range plan {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
		id := schemas.EventID("turn", u.tenant, u.conv, u.turn) + "-" + schemas.RoleUser
		ev, err := schemas.NewEvent(schemas.TypeTurn, id, "/rein/chaos-test",
			schemas.Meta{Tenant: u.tenant, Conversation: u.conv, Turn: u.turn},
			schemas.Turn{Role: schemas.RoleUser, Text: u.text(), Turn: u.turn})
		if err != nil {
			return fmt.Errorf("turn %s: %w", u.key(), err)
		}
		msg, err := streams.Encode(bus.TurnSubject(u.tenant, u.conv, schemas.RoleUser), &ev)
		if err != nil {
			return fmt.Errorf("turn %s: %w", u.key(), err)
		}
		msg.Header.Set(bus.HeaderMsgID, id)
		giveUp := time.Now().Add(5 * time.Minute)
		var lastErr error
		if !chaosWait(time.Until(giveUp), func() bool {
			pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
			defer pcancel()
			_, lastErr = js.PublishMsg(pctx, msg, jetstream.WithExpectStream(bus.StreamTurns))
			return lastErr == nil || ctx.Err() != nil
		}) {
			return fmt.Errorf("turn %s not stored within 5m: %w", u.key(), lastErr)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		published.Add(1)
	}
	return nil
}

// chaosQuiet is the pipeline's state when quiet: every consumer of rein's
// streams with nothing pending or unacked (a message the order gate holds
// is unacked), and the streams' last sequences. Each stage acks a message
// only after its outputs are stored, so a quiet pipeline produces nothing
// more; two equal quiet observations some time apart rule out a stage
// caught between reading its input and storing its output.
func chaosQuiet(js jetstream.JetStream) (state string, quiet bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	for _, name := range []string{bus.StreamTurns, bus.StreamDetections, bus.StreamTasks, bus.StreamSteps,
		bus.StreamOutcomes, bus.StreamDLQ, bus.StreamHandoff} {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return "", false
		}
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			if ci.NumPending > 0 || ci.NumAckPending > 0 {
				return "", false
			}
		}
		if lister.Err() != nil {
			return "", false
		}
		info, err := s.Info(ctx)
		if err != nil {
			return "", false
		}
		fmt.Fprintf(&b, "%s:%d ", name, info.State.LastSeq)
	}
	return b.String(), true
}

// chaosSettle waits until the pipeline is quiet twice, at least two
// seconds apart, with nothing stored in between.
func chaosSettle(js jetstream.JetStream, within time.Duration) bool {
	var seen string
	var since time.Time
	return chaosWait(within, func() bool {
		state, quiet := chaosQuiet(js)
		switch {
		case !quiet:
			seen = ""
		case state != seen:
			seen, since = state, time.Now()
		case time.Since(since) >= 2*time.Second:
			return true
		}
		return false
	})
}

// chaosMsg is one stored event, as the check needs it.
type chaosMsg struct {
	seq                      uint64
	subject, id, typ, tenant string
	conv                     string
	turn                     int
	data                     []byte
}

// chaosRead reads a whole stream through rein's range reader (no durable
// state left behind). Right after a node restart a read may find no
// responder for a moment: it is tried again, within two minutes.
func chaosRead(t *testing.T, js jetstream.JetStream, stream string) []chaosMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		var out []chaosMsg
		err := streams.ReadStream(ctx, js, stream, streams.ReadOptions{}, func(r streams.Raw) error {
			h := nats.Header(r.Header)
			turn, _ := strconv.Atoi(h.Get("ce-turn"))
			out = append(out, chaosMsg{seq: r.Sequence, subject: streams.Unpartitioned(r.Subject), id: h.Get("ce-id"), typ: h.Get("ce-type"),
				tenant: h.Get("ce-tenant"), conv: h.Get("ce-conversation"), turn: turn, data: r.Data})
			return nil
		})
		if err == nil {
			return out
		}
		if ctx.Err() != nil || !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("read %s: %v", stream, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

type chaosResult struct {
	replies, detections, tasks, escalations, reports, dlq int
}

// chaosCheck reads the streams and asserts the promise:
//
//   - every published user turn is stored once in REIN_TURNS;
//   - it has exactly one detection (REIN_DETECTIONS) and one task
//     (REIN_TASKS);
//   - it has exactly one agent outcome. The outcome kinds that count are an
//     agent reply (dev.rein.turn.v1 on rein.turns.<t>.<c>.agent) and, for
//     the human path, an escalation on rein.escalations.<t>.<c> (this
//     branch has no explicit failed/superseded record). The test's agent
//     never escalates or reports and its turns never ask for it, so here
//     every outcome must be a reply, whose text must be the one the agent
//     gives when it ran the turn after exactly the conversation's earlier
//     turns; any escalation or report is an unexpected outcome;
//   - no stream holds two events with one id;
//   - per conversation, the stream sequences of the replies (and of the
//     detections) increase with the turn number;
//   - REIN_DLQ is empty (the test injects nothing to dead-letter).
func chaosCheck(t *testing.T, js jetstream.JetStream, plan []chaosTurn) chaosResult {
	t.Helper()
	want := map[string]chaosTurn{}
	for _, u := range plan {
		want[u.key()] = u
	}
	var res chaosResult
	problems := map[string][]string{} // kind → first offenders
	report := func(kind, format string, a ...any) {
		problems[kind] = append(problems[kind], fmt.Sprintf(format, a...))
	}
	dupIDs := func(stream string, msgs []chaosMsg) {
		seen := map[string]uint64{}
		for _, m := range msgs {
			if m.id == "" {
				report("event without ce-id", "%s seq %d subject %s", stream, m.seq, m.subject)
				continue
			}
			if first, ok := seen[m.id]; ok {
				report("duplicate event id", "%s: %s at seq %d and %d", stream, m.id, first, m.seq)
			}
			seen[m.id] = m.seq
		}
	}
	type perTurn struct{ user, detections, tasks, replies, escalations int }
	count := map[string]*perTurn{}
	at := func(kind string, m chaosMsg) *perTurn {
		k := m.tenant + "/" + m.conv + "/" + strconv.Itoa(m.turn)
		if _, ok := want[k]; !ok {
			report("event for a turn never published", "%s %s (seq %d, id %s)", kind, k, m.seq, m.id)
			return &perTurn{}
		}
		if count[k] == nil {
			count[k] = &perTurn{}
		}
		return count[k]
	}
	// order: conversation → sequences by turn, per kind.
	replySeq := map[string]map[int]uint64{}
	detSeq := map[string]map[int]uint64{}
	note := func(into map[string]map[int]uint64, m chaosMsg) {
		c := m.tenant + "/" + m.conv
		if into[c] == nil {
			into[c] = map[int]uint64{}
		}
		into[c][m.turn] = m.seq
	}

	turnsMsgs := chaosRead(t, js, bus.StreamTurns)
	dupIDs(bus.StreamTurns, turnsMsgs)
	for _, m := range turnsMsgs {
		switch {
		case strings.HasSuffix(m.subject, "."+schemas.RoleUser):
			at("user turn", m).user++
		case strings.HasSuffix(m.subject, "."+schemas.RoleAgent):
			res.replies++
			at("agent reply", m).replies++
			note(replySeq, m)
			if u, ok := want[m.tenant+"/"+m.conv+"/"+strconv.Itoa(m.turn)]; ok {
				var tr schemas.Turn
				if err := json.Unmarshal(m.data, &tr); err != nil {
					report("undecodable reply", "%s seq %d: %v", u.key(), m.seq, err)
				} else if tr.Text != chaosExpectedReply(u) {
					report("reply from the wrong context", "%s (seq %d): got %q, want %q", u.key(), m.seq, tr.Text, chaosExpectedReply(u))
				}
			}
		}
	}
	detections := chaosRead(t, js, bus.StreamDetections)
	dupIDs(bus.StreamDetections, detections)
	for _, m := range detections {
		res.detections++
		at("detection", m).detections++
		note(detSeq, m)
	}
	tasks := chaosRead(t, js, bus.StreamTasks)
	dupIDs(bus.StreamTasks, tasks)
	for _, m := range tasks {
		res.tasks++
		at("task", m).tasks++
	}
	outcomes := chaosRead(t, js, bus.StreamOutcomes)
	dupIDs(bus.StreamOutcomes, outcomes)
	for _, m := range outcomes {
		if strings.HasPrefix(m.subject, "rein.escalations.") {
			res.escalations++
			at("escalation", m).escalations++
			report("unexpected escalation", "%s/%s/%d (seq %d, id %s)", m.tenant, m.conv, m.turn, m.seq, m.id)
		} else {
			res.reports++
			report("unexpected report", "%s/%s/%d (seq %d, id %s)", m.tenant, m.conv, m.turn, m.seq, m.id)
		}
	}
	dupIDs(bus.StreamSteps, chaosRead(t, js, bus.StreamSteps))
	for _, m := range chaosRead(t, js, bus.StreamDLQ) {
		res.dlq++
		report("dead letter", "seq %d subject %s: %.300s", m.seq, m.subject, m.data)
	}

	for _, u := range plan {
		c := count[u.key()]
		if c == nil {
			c = &perTurn{}
		}
		if c.user != 1 {
			report("user turn not stored exactly once", "%s: %d copies", u.key(), c.user)
		}
		if c.detections != 1 {
			report("not exactly one detection", "%s: %d", u.key(), c.detections)
		}
		if c.tasks != 1 {
			report("not exactly one task", "%s: %d", u.key(), c.tasks)
		}
		switch outcomes := c.replies + c.escalations; {
		case outcomes == 0:
			report("turn without an outcome", "%s (detections %d, tasks %d)", u.key(), c.detections, c.tasks)
		case outcomes > 1:
			report("more than one outcome", "%s: %d replies, %d escalations", u.key(), c.replies, c.escalations)
		}
	}
	orderCheck := func(kind string, seqs map[string]map[int]uint64) {
		convs := make([]string, 0, len(seqs))
		for c := range seqs {
			convs = append(convs, c)
		}
		slices.Sort(convs)
		for _, c := range convs {
			byTurn := seqs[c]
			turns := make([]int, 0, len(byTurn))
			for n := range byTurn {
				turns = append(turns, n)
			}
			slices.Sort(turns)
			for i := 1; i < len(turns); i++ {
				if byTurn[turns[i]] < byTurn[turns[i-1]] {
					report(kind+" out of turn order", "%s: turn %d stored at seq %d, before turn %d at seq %d",
						c, turns[i], byTurn[turns[i]], turns[i-1], byTurn[turns[i-1]])
				}
			}
		}
	}
	orderCheck("reply", replySeq)
	orderCheck("detection", detSeq)

	kinds := make([]string, 0, len(problems))
	for k := range problems {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		list := problems[k]
		t.Errorf("%s: %d, the first: %s", k, len(list), strings.Join(list[:min(10, len(list))], "; "))
	}
	return res
}

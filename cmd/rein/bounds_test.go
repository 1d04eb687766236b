package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// serveProc is a `rein serve` subprocess on dir.
type serveProc struct {
	cmd                *exec.Cmd
	natsAddr, httpAddr string
	out                *bytes.Buffer
}

// startServeProc starts bin serve on dir, with extra flags, and waits
// until /readyz answers.
func startServeProc(t *testing.T, bin, dir string, extra ...string) *serveProc {
	t.Helper()
	p := &serveProc{natsAddr: freePort(t), httpAddr: freePort(t), out: &bytes.Buffer{}}
	args := []string{"serve", "--data-dir", dir, "--nats-listen", p.natsAddr, "--http", p.httpAddr, "--log-level", "error"}
	p.cmd = exec.Command(bin, append(args, extra...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill() })
	rtest.CheckFor(t, 90*time.Second, "rein serve ready", func() bool { return httpReady(p.httpAddr) })
	return p
}

func (p *serveProc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// rssBytes is a process's resident set (VmRSS in /proc/PID/status).
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// Issue 32, observation 5: two `rein serve` on one data directory ran two
// JetStream servers on one store. The second now exits non-zero naming the
// first (its pid); commands that only read the directory (keys) or talk
// to the server (dlq) are not blocked; after the first dies by kill -9, a
// new serve starts. On the code before, the second serve came up.
func TestASecondServeOnTheSameDataDirectoryIsRefused(t *testing.T) {
	t.Parallel()
	bin := chaosBinary(t)
	dir := t.TempDir()
	first := startServeProc(t, bin, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "serve", "--data-dir", dir, "--nats-listen", freePort(t), "--http", freePort(t),
		"--log-level", "error").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("second serve on the same data directory: %v, want a non-zero exit\n%s", err, out)
	}
	if want := fmt.Sprintf("pid %d", first.cmd.Process.Pid); !strings.Contains(string(out), want) || !strings.Contains(string(out), "held by another rein process") {
		t.Errorf("second serve said %q; want it to name the holder (%s)", out, want)
	}
	if out, err := exec.CommandContext(ctx, bin, "keys", "server-config", "--data-dir", dir).CombinedOutput(); err != nil {
		t.Errorf("keys server-config while serve runs: %v\n%s", err, out)
	}
	natsURL := "nats://" + first.natsAddr
	if out, err := exec.CommandContext(ctx, bin, "dlq", "list", "--nats-url", natsURL, "--data-dir", dir).CombinedOutput(); err != nil {
		t.Errorf("dlq list while serve runs: %v\n%s", err, out)
	}
	first.kill() // kill -9: the kernel drops the lock
	startServeProc(t, bin, dir)
}

// Issue 32, observation 2's "done when": the largest payload each identity
// can send — a 7.5 MB publish, the largest message REIN_TURNS stores (as
// the admin and the ingress identities), the largest a stage identity can
// store on a stage's input (the agent worker's on REIN_OUTCOMES), a 7.5 MB
// POST /v1/turns — is refused at the edge or dead-lettered once with a
// bounded record, nothing is redelivered, and the resident memory of a
// real `rein serve` stays within 50 MB of its baseline. On the code before,
// the 7.5 MB message was stored, its dead letter refused, and it was
// redelivered for ever while RSS grew by hundreds of MB.
func TestTheLargestPayloadsAreBoundedAndMemoryStaysFlat(t *testing.T) {
	t.Parallel()
	bin := chaosBinary(t)
	dir := t.TempDir()
	// GOGC alone (--heap-goal 0): under the default goal the collector
	// lets garbage reach 256 MiB before a cycle, so the resident set
	// would grow by the messages' garbage, bounded but far past 50 MB, and
	// a message that loops would no longer stand out from it.
	p := startServeProc(t, bin, dir, "--heap-goal", "0")
	pid := p.cmd.Process.Pid
	natsURL := "nats://" + p.natsAddr
	ctx := context.Background()
	conn := func(identity string) (*nats.Conn, jetstream.JetStream) {
		key, err := nats.NkeyOptionFromSeed(natsserver.SeedFile(dir, identity))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(natsURL, key)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		return nc, js
	}
	adminNC, admin := conn(natsserver.IdentityAdmin)
	_, ingress := conn(natsserver.IdentityIngress)
	_, agent := conn(natsserver.IdentityAgentWorker)
	base := rssBytes(t, pid)
	peak := base

	// The server-level bound: no client may send more than MaxPayloadBytes.
	if got := adminNC.MaxPayload(); got != streams.MaxPayloadBytes {
		t.Errorf("the server's max payload is %d, want %d", got, streams.MaxPayloadBytes)
	}
	huge := bytes.Repeat([]byte("z"), 7_500_000)
	if _, err := admin.Publish(ctx, bus.TurnSubject("acme", "huge", "user"), huge); !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("a 7.5 MB publish: %v, want refused (max payload)", err)
	}
	// The stream-level bound: the largest message stored, dead-lettered
	// once and bounded, from each identity that can store it.
	largest := bytes.Repeat([]byte("x"), streams.MaxMessageBytes-4<<10)
	const rounds = 5
	for i := range rounds {
		for who, js := range map[string]jetstream.JetStream{"admin": admin, "ingress": ingress} {
			if _, err := js.Publish(ctx, bus.TurnSubject("acme", fmt.Sprintf("%s-%d", who, i), "user"), largest); err != nil {
				t.Fatalf("%s stores the largest turn: %v", who, err)
			}
		}
		if _, err := agent.Publish(ctx, bus.EscalationSubject("acme", fmt.Sprintf("agent-%d", i)), largest); err != nil {
			t.Fatalf("agent worker stores the largest escalation: %v", err)
		}
		peak = max(peak, rssBytes(t, pid))
	}
	// HTTP ingress: refused with 413, read no further than the limit.
	tok, err := os.ReadFile(filepath.Join(dir, "http-token"))
	if err != nil {
		t.Fatal(err)
	}
	for range rounds {
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.httpAddr+"/v1/turns", bytes.NewReader(huge))
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
		req.Header.Set("Content-Type", "application/cloudevents+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST 7.5 MB: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("POST 7.5 MB: %d, want 413", resp.StatusCode)
		}
		peak = max(peak, rssBytes(t, pid))
	}
	want := 3 * rounds
	rtest.CheckFor(t, 60*time.Second, "every largest message dead-lettered", func() bool {
		peak = max(peak, rssBytes(t, pid))
		entries, err := consume.ListDeadLetters(ctx, admin, consume.DeadLetterFilter{})
		return err == nil && len(entries) >= want
	})
	entries, err := consume.ListDeadLetters(ctx, admin, consume.DeadLetterFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != want {
		t.Errorf("%d dead letters, want %d (one each)", len(entries), want)
	}
	for _, e := range entries {
		if !e.Letter.Truncated || len(e.Letter.Data) != streams.DeadLetterPrefixBytes || e.Letter.Size != int64(len(largest)) {
			t.Errorf("REIN_DLQ #%d (%s): truncated %v, %d bytes kept of %d; want a bounded record", e.Sequence, e.Letter.Stage,
				e.Letter.Truncated, len(e.Letter.Data), e.Letter.Size)
		}
	}
	// Nothing handed back: the consumers hold nothing and redelivered nothing.
	for stream, durable := range map[string]string{bus.StreamTurns: bus.DurableDetector, bus.StreamOutcomes: bus.DurableEscalation} {
		rtest.CheckFor(t, 30*time.Second, durable+" idle", func() bool {
			ci, err := admin.Consumer(ctx, stream, durable)
			if err != nil {
				return false
			}
			info, err := ci.Info(ctx)
			return err == nil && info.NumAckPending == 0 && info.NumPending == 0
		})
		ci, _ := admin.Consumer(ctx, stream, durable)
		if info, err := ci.Info(ctx); err != nil || info.NumRedelivered != 0 {
			t.Errorf("%s: %v, redelivered %d; want none", durable, err, info.NumRedelivered)
		}
	}
	peak = max(peak, rssBytes(t, pid))
	t.Logf("rein serve RSS: baseline %d MB, peak %d MB (%d largest messages, %d refused 7.5 MB POSTs)", base>>20, peak>>20, want, rounds)
	if peak-base > 50<<20 {
		t.Errorf("RSS grew %d MB over the baseline (%d MB), want under 50", (peak-base)>>20, base>>20)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/natsserver"
)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runCLI runs one rein command in-process and returns its stdout.
func runCLI(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(io.Discard)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return out.String(), err
}

// startServe runs `rein serve` in-process until the returned stop is called.
func startServe(t *testing.T, dataDir, natsAddr, httpAddr string, extra ...string) (stop func()) {
	t.Helper()
	return runServe(t, httpAddr, 30*time.Second,
		append([]string{"--data-dir", dataDir, "--nats-listen", natsAddr, "--http", httpAddr, "--log-level", "error"}, extra...)...)
}

// runServe runs `rein serve args…` in-process, waits until /readyz on
// httpAddr answers 200 (within), and returns what stops it.
func runServe(t *testing.T, httpAddr string, within time.Duration, args ...string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runCLI(t, ctx, append([]string{"serve"}, args...)...)
		done <- err
	}()
	rtest.CheckFor(t, within, "serve ready", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		return httpReady(httpAddr)
	})
	return func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	}
}

type streamRow struct {
	Name      string `json:"name"`
	Messages  uint64 `json:"messages"`
	Consumers []struct {
		Name    string `json:"name"`
		Pending uint64 `json:"pending"`
	} `json:"consumers"`
}

// dataDirOf maps a test server's URL to its data dir, where the CLI finds
// the admin key.
var dataDirOf = map[string]string{}

func streamCounts(t *testing.T, url string) map[string]uint64 {
	t.Helper()
	out, err := runCLI(t, context.Background(), "streams", "--json", "--nats-url", url, "--data-dir", dataDirOf[url])
	if err != nil {
		t.Fatalf("streams: %v", err)
	}
	var rows []streamRow
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("streams --json: %v\n%s", err, out)
	}
	m := map[string]uint64{}
	for _, r := range rows {
		m[r.Name] = r.Messages
	}
	return m
}

// The "done when": 100 turns with rein publish and malformed input
// from a plain NATS client end up as 100 in REIN_TURNS and the rest in
// REIN_DLQ; /readyz and /metrics answer; a restart on the same data dir
// keeps every message.
func TestServePublishStreamsRestart(t *testing.T) {
	dir := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	url := "nats://" + natsAddr
	dataDirOf[url] = dir
	stop := startServe(t, dir, natsAddr, httpAddr)

	var lines strings.Builder
	for c := 0; c < 10; c++ {
		for turn := 1; turn <= 10; turn++ {
			fmt.Fprintf(&lines, `{"tenant":"acme","conversation":"c%d","text":"hello number %d"}`+"\n", c, turn)
		}
	}
	file := filepath.Join(t.TempDir(), "turns.jsonl")
	if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, context.Background(), "publish", "--nats-url", url, "--data-dir", dir, "--file", file)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	if n := len(strings.Fields(out)); n != 100 {
		t.Fatalf("publish printed %d sequences, want 100", n)
	}

	// A plain client gets nothing without a key; with the ingress key it
	// may store turns (and nothing else).
	if nc, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Fatal("the embedded server accepted a connection without credentials")
	}
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: url, NkeyFile: natsserver.SeedFile(dir, natsserver.IdentityIngress)})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, body := range []string{`{not json`, `{"role":"user","text":"no headers"}`, "\xff\xfe"} {
		if err := nc.Publish("rein.turns.acme.bad.user", []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	hdr := nats.Header{"ce-specversion": {"1.0"}, "ce-id": {"x"}, "ce-source": {"/x"}, "ce-type": {"dev.rein.turn.v1"}, "ce-tenant": {"bad tenant"}}
	if err := nc.PublishMsg(&nats.Msg{Subject: "rein.turns.acme.bad.user", Header: hdr, Data: []byte(`{"role":"user","text":"x"}`)}); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()

	rtest.CheckFor(t, 60*time.Second, "100 turns kept, 4 dead letters, 100 detections", func() bool {
		c := streamCounts(t, url)
		return c["REIN_TURNS"] == 100 && c["REIN_DLQ"] == 4 && c["REIN_DETECTIONS"] == 100
	})
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"rein_stage_messages_total", "rein_detector_decisions_total", "rein_stream_messages"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	stop()

	stop = startServe(t, dir, natsAddr, httpAddr)
	defer stop()
	c := streamCounts(t, url)
	if c["REIN_TURNS"] != 100 || c["REIN_DLQ"] != 4 || c["REIN_DETECTIONS"] != 100 {
		t.Errorf("after restart: %v", c)
	}
}

// TestServeTrustBoundaries: a fresh `rein serve` needs no flags yet
// authenticates everything: the HTTP port takes the generated local token
// (401 without, 421 for a foreign Host), the data dir and its secrets are
// owner-only, and unsafe configurations refuse to start.
func TestServeTrustBoundaries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	natsAddr, httpAddr := freePort(t), freePort(t)
	stop := startServe(t, dir, natsAddr, httpAddr)
	defer stop()
	tok, err := os.ReadFile(filepath.Join(dir, "http-token"))
	if err != nil {
		t.Fatalf("the local HTTP token: %v", err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "http-token"): 0o600,
		natsserver.KeysDir(dir): 0o700, natsserver.SeedFile(dir, natsserver.IdentityAdmin): 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, st.Mode().Perm(), err, want)
		}
	}
	post := func(token, host string) int {
		body := `{"specversion":"1.0","id":"t1","source":"/p","type":"dev.rein.turn.v1","tenant":"acme","conversation":"c1","turn":1,"datacontenttype":"application/json","data":{"role":"user","text":"hi"}}`
		r, _ := http.NewRequest(http.MethodPost, "http://"+httpAddr+"/v1/turns", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/cloudevents+json")
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			r.Host = host
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("", ""); got != 401 {
		t.Errorf("POST /v1/turns without a token: %d, want 401", got)
	}
	if got := post(strings.TrimSpace(string(tok)), "rebound.example"); got != 421 {
		t.Errorf("POST with a foreign Host: %d, want 421", got)
	}
	if got := post(strings.TrimSpace(string(tok)), ""); got != 202 {
		t.Errorf("POST with the local token: %d, want 202", got)
	}
	// The turn went through the pipeline, each stage on its own identity.
	url := "nats://" + natsAddr
	dataDirOf[url] = dir
	rtest.CheckFor(t, 30*time.Second, "the posted turn detected", func() bool {
		return streamCounts(t, url)["REIN_DETECTIONS"] == 1
	})

	refused := []struct {
		name string
		args []string
	}{
		{"HTTP on all interfaces without tokens", []string{"--http", "0.0.0.0:0", "--nats-listen", "127.0.0.1:0"}},
		{"NATS on all interfaces without TLS", []string{"--http", "", "--nats-listen", "0.0.0.0:0"}},
		{"a NATS password on the command line", []string{"--http", "", "--nats-listen", "127.0.0.1:0", "--nats-password", "hunter2"}},
	}
	for _, c := range refused {
		args := append([]string{"serve", "--data-dir", t.TempDir(), "--stages", "none", "--log-level", "error"}, c.args...)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := runCLI(t, ctx, args...)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut {
			t.Errorf("%s: started (err %v)", c.name, err)
		}
	}
}

// A serve on a non-default NATS port records its address in the data
// directory, so client commands given only --data-dir reach it (before,
// every one needed --nats-url and failed on 4222); an explicit --nats-url
// still wins.
func TestClientCommandsFindServeThroughTheDataDir(t *testing.T) {
	dir := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	stop := startServe(t, dir, natsAddr, httpAddr)
	defer stop()
	if _, err := runCLI(t, context.Background(), "publish", "--data-dir", dir, "--tenant", "acme", "--conversation", "local", "--turn", "1", "--text", "hello"); err != nil {
		t.Fatalf("publish with --data-dir only: %v", err)
	}
	out, err := runCLI(t, context.Background(), "audit", "--data-dir", dir, "--tenant", "acme", "--conversation", "local")
	if err != nil || !strings.Contains(out, "hello") {
		t.Fatalf("audit with --data-dir only: %v\n%s", err, out)
	}
	if _, err := runCLI(t, context.Background(), "streams", "--data-dir", dir, "--nats-url", "nats://"+freePort(t)); err == nil {
		t.Fatal("an explicit --nats-url to a closed port was overridden by the data directory's address")
	}
}

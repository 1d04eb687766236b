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
func startServe(t *testing.T, dataDir, natsAddr, httpAddr string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := runCLI(t, ctx, "serve", "--data-dir", dataDir, "--nats-listen", natsAddr, "--http", httpAddr, "--log-level", "error")
		done <- err
	}()
	rtest.CheckFor(t, 30*time.Second, "serve ready", func() bool {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v", err)
		default:
		}
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
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

func streamCounts(t *testing.T, url string) map[string]uint64 {
	t.Helper()
	out, err := runCLI(t, context.Background(), "streams", "--json", "--nats-url", url)
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
	out, err := runCLI(t, context.Background(), "publish", "--nats-url", url, "--file", file)
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	if n := len(strings.Fields(out)); n != 100 {
		t.Fatalf("publish printed %d sequences, want 100", n)
	}

	nc, err := nats.Connect(url)
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

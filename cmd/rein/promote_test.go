package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/inception/learned"
	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// typedVariant is the shipped typed model with another threshold: another
// file, so another version.
func typedVariant(t *testing.T, threshold float64) *learned.GateModel {
	t.Helper()
	data, err := learned.DefaultTypedModel().Encode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := learned.ParseGateModel(data)
	if err != nil {
		t.Fatal(err)
	}
	g.Threshold = threshold
	return g
}

// A model is promoted while serve runs: rein.yaml points typed-model at
// another file, later the file itself is replaced, and turns keep flowing
// throughout. Every turn gets exactly one detection; each names the model
// that judged it; once a detection carries the new version, every later
// one does; none is lost and serve never restarts.
func TestPromotionByReloadKeepsEveryTurn(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	models := map[string]*learned.GateModel{"a": typedVariant(t, 0.70), "b": typedVariant(t, 0.65), "c": typedVariant(t, 0.60)}
	version := map[string]string{}
	for name, m := range models {
		version[name] = "typed@" + m.Version()
	}
	pathA, pathB := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	if err := writeModel(pathA, models["a"]); err != nil {
		t.Fatal(err)
	}
	if err := writeModel(pathB, models["b"]); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rein.yaml")
	setModel := func(path string) {
		t.Helper()
		// Written whole, as an operator's editor or a config push would.
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, []byte("typed-model: "+path+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	setModel(pathA)
	natsAddr, httpAddr := freePort(t), freePort(t)
	url := "nats://" + natsAddr
	stop := startServe(t, dataDir, natsAddr, httpAddr, "--config", cfg, "--stages", "detector", "--model-reload", "20ms")
	defer stop()

	ctx := context.Background()
	nc := chaosConnect(t, url, dataDir)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	sent := 0
	publish := func(n int) {
		t.Helper()
		var lines strings.Builder
		mu.Lock()
		for range n {
			fmt.Fprintf(&lines, `{"tenant":"acme","conversation":"c%03d","text":"Please do a skyhop on reservation ABC%03d."}`+"\n", sent, sent)
			sent++
		}
		mu.Unlock()
		file := filepath.Join(t.TempDir(), "turns.jsonl")
		if err := os.WriteFile(file, []byte(lines.String()), 0o644); err != nil {
			t.Error(err)
			return
		}
		if _, err := runCLI(t, ctx, "publish", "--nats-url", url, "--data-dir", dataDir, "--file", file); err != nil {
			t.Errorf("publish: %v", err)
		}
	}
	type det struct {
		conv    string
		version string
	}
	// detections returns the stored detections in stream order.
	detections := func() []det {
		var out []det
		err := streams.ReadStream(ctx, js, streams.StreamDetections, streams.ReadOptions{}, func(r streams.Raw) error {
			if r.Decoded == nil || r.Decoded.Event.Type() != schemas.TypeDetection {
				return nil
			}
			var p schemas.Detection
			if err := r.Decoded.Payload(&p); err != nil {
				return err
			}
			out = append(out, det{conv: r.Decoded.Meta.Conversation, version: p.ModelVersion})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	waitFor := func(n int) []det {
		t.Helper()
		var ds []det
		rtest.CheckFor(t, 60*time.Second, fmt.Sprintf("%d detections", n), func() bool {
			ds = detections()
			return len(ds) >= n
		})
		return ds
	}

	publish(10)
	for _, d := range waitFor(10) {
		if d.version != version["a"] {
			t.Fatalf("before any promotion %s was judged by %q, want %s", d.conv, d.version, version["a"])
		}
	}
	// Promote b by rein.yaml while turns flow, then c by replacing b's
	// file, also while turns flow. A turn published once a promoted model
	// was seen judging is judged by it (or a later one).
	mark := func() int {
		mu.Lock()
		defer mu.Unlock()
		return sent
	}
	promote := func(do func(), to string) int {
		t.Helper()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 5 {
				publish(4)
			}
		}()
		do()
		<-done
		rtest.CheckFor(t, 30*time.Second, "the promoted model judging", func() bool {
			publish(1)
			ds := detections()
			return len(ds) > 0 && ds[len(ds)-1].version == to
		})
		return mark()
	}
	seenB := promote(func() { setModel(pathB) }, version["b"])
	publish(5)
	seenC := promote(func() {
		if err := writeModel(pathB, models["c"]); err != nil {
			t.Error(err)
		}
	}, version["c"])
	publish(5)
	total := mark()
	ds := waitFor(total)

	count := map[string]int{}
	judgedBy := map[string]string{}
	for _, d := range ds {
		count[d.conv]++
		judgedBy[d.conv] = d.version
	}
	if len(ds) != total || len(count) != total {
		t.Fatalf("%d detections of %d conversations for %d turns", len(ds), len(count), total)
	}
	for i := range total {
		conv := fmt.Sprintf("c%03d", i)
		v := judgedBy[conv]
		ok := v == version["a"] || v == version["b"] || v == version["c"]
		switch {
		case i < 10:
			ok = v == version["a"]
		case i >= seenC:
			ok = v == version["c"]
		case i >= seenB:
			ok = v == version["b"] || v == version["c"]
		}
		if !ok {
			t.Errorf("turn of %s judged by %q (b seen from turn %d, c from %d)", conv, v, seenB, seenC)
		}
	}
}

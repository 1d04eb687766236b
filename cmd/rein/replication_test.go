package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// Replication settings: flags over the file's section, and R3 on the
// embedded single server refused with the fix.
func TestReplicationConfig(t *testing.T) {
	tests := []struct {
		name          string
		url           string
		replicas, kv  int
		tags          []string
		file          map[string]natsserver.StreamSettings
		wantErr       error
		wantMax       int
		wantTurnsRepl int
	}{
		{name: "embedded default", wantMax: 1, wantTurnsRepl: 1},
		{name: "embedded R3 refused", replicas: 3, wantErr: streams.ErrReplicasUnavailable},
		{name: "embedded file R3 refused", file: map[string]natsserver.StreamSettings{"REIN_OUTCOMES": {Replicas: 3}}, wantErr: streams.ErrReplicasUnavailable},
		{name: "embedded KV R3 refused", kv: 3, wantErr: streams.ErrReplicasUnavailable},
		{name: "embedded tags refused", tags: []string{"ssd"}, wantErr: streams.ErrInvalidConfig},
		{name: "cluster R3", url: "nats://a:4222", replicas: 3, wantMax: 3, wantTurnsRepl: 3},
		{name: "flag beats file", url: "nats://a:4222", replicas: 1, file: map[string]natsserver.StreamSettings{"REIN_TURNS": {Replicas: 3}}, wantMax: 1, wantTurnsRepl: 1},
		{name: "negative", url: "nats://a:4222", replicas: -1, wantErr: streams.ErrInvalidConfig},
		{name: "too many", url: "nats://a:4222", replicas: 7, wantErr: streams.ErrInvalidConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &serverFlags{streamReplicas: tc.replicas, kvReplicas: tc.kv, placementTags: tc.tags}
			f.nats.url = tc.url
			p := natsserver.DefaultProvision()
			p.Streams = tc.file
			err := replicationConfig(f, &p)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if errors.Is(err, streams.ErrReplicasUnavailable) && !strings.Contains(err.Error(), "--stream-replicas 1") {
					t.Fatalf("error does not name the fix: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.MaxReplicas(); got != tc.wantMax {
				t.Errorf("max replicas %d, want %d", got, tc.wantMax)
			}
			if got := p.StreamConfig(bus.StreamTurns).Replicas; got != tc.wantTurnsRepl {
				t.Errorf("REIN_TURNS replicas %d, want %d", got, tc.wantTurnsRepl)
			}
		})
	}
}

// End to end: REIN_STREAM_REPLICAS=3 on the embedded server stops serve at
// once with the fix, before any server starts; the flag wins over it.
func TestServeRefusesReplicasOnEmbedded(t *testing.T) {
	t.Setenv("REIN_STREAM_REPLICAS", "3")
	dir := t.TempDir()
	_, err := runCLI(t, t.Context(), "serve", "--data-dir", dir, "--nats-listen", "127.0.0.1:0", "--http", "", "--stages", "none")
	if !errors.Is(err, streams.ErrReplicasUnavailable) || !strings.Contains(err.Error(), "embedded NATS server is a single server") {
		t.Fatalf("serve with REIN_STREAM_REPLICAS=3: %v", err)
	}
	if _, statErr := os.Stat(filepath.Join(dir, "jetstream")); !os.IsNotExist(statErr) {
		t.Fatalf("the embedded server started before the refusal (%v)", statErr)
	}
}

// rein version prints what the build stamped.
func TestVersionStamped(t *testing.T) {
	oldV, oldR, oldB := version, revision, buildTime
	t.Cleanup(func() { version, revision, buildTime = oldV, oldR, oldB })
	version, revision, buildTime = "v1.2.3", "abc123", "2026-12-04T05:00:00Z"
	out, err := runCLI(t, t.Context(), "version")
	if err != nil || !strings.HasPrefix(out, "rein v1.2.3 (revision abc123, built 2026-12-04T05:00:00Z, go") {
		t.Fatalf("version: %q %v", out, err)
	}
}

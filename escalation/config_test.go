package escalation

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"
)

func TestSinksConfigYAML(t *testing.T) {
	src := `
sinks:
  - type: webhook
    url: https://cc.example.com/rein
    mode: binary
    secret_env: REIN_WEBHOOK_SECRET
    attempts: 7
    backoff_base: 250ms
    backoff_max: 1m
    timeout: 3s
  - type: jsonl
    path: ./data/audit.jsonl
    max_bytes: 1048576
    sync_interval: 50ms
  - type: handoff
    deadline: 2m
`
	var cfg SinksConfig
	if err := yaml.Unmarshal([]byte(src), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := SinksConfig{Sinks: []SinkConfig{
		{Type: SinkWebhook, URL: "https://cc.example.com/rein", Mode: ModeBinary, SecretEnv: "REIN_WEBHOOK_SECRET",
			Attempts: 7, BackoffBase: 250 * time.Millisecond, BackoffMax: time.Minute, Timeout: 3 * time.Second},
		{Type: SinkJSONL, Path: "./data/audit.jsonl", MaxBytes: 1 << 20, SyncInterval: 50 * time.Millisecond},
		{Type: SinkHandoff, Deadline: 2 * time.Minute},
	}}
	for i := range want.Sinks {
		g, w := cfg.Sinks[i], want.Sinks[i]
		if g.Type != w.Type || g.URL != w.URL || g.Mode != w.Mode || g.SecretEnv != w.SecretEnv || g.Attempts != w.Attempts ||
			g.BackoffBase != w.BackoffBase || g.BackoffMax != w.BackoffMax || g.Timeout != w.Timeout ||
			g.Path != w.Path || g.MaxBytes != w.MaxBytes || g.SyncInterval != w.SyncInterval || g.Deadline != w.Deadline {
			t.Errorf("sink %d: got %+v, want %+v", i, g, w)
		}
	}
}

func TestSinksConfigValidate(t *testing.T) {
	hook := SinkConfig{Type: SinkWebhook, URL: "https://h/x", SecretEnv: "S"}
	tests := []struct {
		name    string
		sinks   []SinkConfig
		wantErr string // substring; "" = valid
	}{
		{"empty is valid", nil, ""},
		{"webhook", []SinkConfig{hook}, ""},
		{"webhook with file secret", []SinkConfig{{Type: SinkWebhook, URL: "http://h/x", SecretFile: "/s"}}, ""},
		{"missing type", []SinkConfig{{URL: "https://h/x"}}, "type is required"},
		{"unknown type", []SinkConfig{{Type: "kafka"}}, "unknown sink type"},
		{"webhook without secret", []SinkConfig{{Type: SinkWebhook, URL: "https://h/x"}}, "exactly one of secret_env and secret_file"},
		{"webhook with both secrets", []SinkConfig{{Type: SinkWebhook, URL: "https://h/x", SecretEnv: "S", SecretFile: "/s"}}, "exactly one"},
		{"webhook bad url", []SinkConfig{{Type: SinkWebhook, URL: "h/x", SecretEnv: "S"}}, "absolute http(s) URL"},
		{"webhook bad mode", []SinkConfig{{Type: SinkWebhook, URL: "https://h/x", SecretEnv: "S", Mode: "json"}}, "mode"},
		{"webhook with jsonl option", []SinkConfig{{Type: SinkWebhook, URL: "https://h/x", SecretEnv: "S", Path: "/a"}}, "path do not apply"},
		{"jsonl without path", []SinkConfig{{Type: SinkJSONL}}, "path is required"},
		{"jsonl with url", []SinkConfig{{Type: SinkJSONL, Path: "a", URL: "https://h"}}, "url do not apply"},
		{"jsonl negative size", []SinkConfig{{Type: SinkJSONL, Path: "a", MaxBytes: -1}}, "negative"},
		{"two jsonl on one path", []SinkConfig{{Type: SinkJSONL, Path: "a/b"}, {Type: SinkJSONL, Path: "a/./b"}}, "already used"},
		{"handoff negative deadline", []SinkConfig{{Type: SinkHandoff, Deadline: -time.Second}}, "negative"},
		{"two handoffs", []SinkConfig{{Type: SinkHandoff}, {Type: SinkHandoff}}, "only one handoff"},
		{"errors name the position", []SinkConfig{hook, {Type: SinkJSONL}}, "sinks[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := SinksConfig{Sinks: tc.sinks}.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want ErrInvalidConfig containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestBuildSinks(t *testing.T) {
	rcv := &receiver{t: t, secret: []byte("from-file-0123456789abcdef0123456789")}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("from-file-0123456789abcdef0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js := startJetStream(t)
	if _, err := EnsureHandoffStream(testCtx(t), js, 1); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := SinksConfig{Sinks: []SinkConfig{
		{Type: SinkWebhook, URL: srv.URL, SecretFile: secretFile, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond},
		{Type: SinkWebhook, URL: srv.URL, SecretEnv: "HOOK_SECRET", Mode: ModeBinary},
		{Type: SinkJSONL, Path: filepath.Join(dir, "audit.jsonl")},
		{Type: SinkHandoff, Deadline: time.Hour},
	}}
	env := map[string]string{"HOOK_SECRET": "from-file-0123456789abcdef0123456789"}
	sinks, err := BuildSinks(cfg, SinkDeps{JetStream: js, Registerer: reg, Getenv: func(k string) string { return env[k] }, Transcript: transcriptOf})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ev := escalationEvent(t, "acme", "c1", 1)
	for _, s := range sinks {
		names = append(names, s.Name())
		if err := s.Deliver(testCtx(t), ev); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		if f, ok := s.(Flusher); ok {
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if strings.Join(names, ",") != "webhook,webhook-2,jsonl,handoff" {
		t.Fatalf("sinks %v", names)
	}
	for _, s := range sinks {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rcv.mu.Lock()
	if len(rcv.accepted) != 1 || rcv.dupes != 1 || rcv.badSigned != 0 {
		t.Errorf("receiver: accepted %d, dupes %d, bad signatures %d", len(rcv.accepted), rcv.dupes, rcv.badSigned)
	}
	rcv.mu.Unlock()
	if got, err := ReadAuditFiles(filepath.Join(dir, "audit.jsonl")); err != nil || len(got) != 1 {
		t.Errorf("audit: %d records (%v)", len(got), err)
	}
	if item, err := Claim(testCtx(t), js, time.Second); err != nil || len(item.Transcript) != 2 {
		t.Errorf("handoff claim: %+v (%v)", item, err)
	}
	// The metrics are registered once and shared; a second NewMetrics on
	// the same registry (the stage's) returns the same collectors.
	m2, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2.ObserveEscalation("transfer_to_human_agents", "")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range families {
		got[f.GetName()] = true
	}
	for _, n := range []string{"rein_sink_deliveries_total", "rein_sink_delivery_seconds", "rein_escalations_total"} {
		if !got[n] {
			t.Errorf("metric %s not gathered (have %v)", n, got)
		}
	}
}

func TestBuildSinksErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  SinksConfig
		deps SinkDeps
	}{
		{"unset secret env", SinksConfig{Sinks: []SinkConfig{{Type: SinkWebhook, URL: "http://h/x", SecretEnv: "NOPE"}}},
			SinkDeps{Getenv: func(string) string { return "" }}},
		{"missing secret file", SinksConfig{Sinks: []SinkConfig{{Type: SinkWebhook, URL: "http://h/x", SecretFile: filepath.Join(dir, "none")}}}, SinkDeps{}},
		{"handoff without JetStream", SinksConfig{Sinks: []SinkConfig{{Type: SinkJSONL, Path: filepath.Join(dir, "a.jsonl")}, {Type: SinkHandoff}}}, SinkDeps{}},
		{"invalid config", SinksConfig{Sinks: []SinkConfig{{Type: "smtp"}}}, SinkDeps{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sinks, err := BuildSinks(tc.cfg, tc.deps)
			if !errors.Is(err, ErrInvalidConfig) || sinks != nil {
				t.Fatalf("got %v, %v; want ErrInvalidConfig", sinks, err)
			}
		})
	}
}

var _ http.Handler = (*receiver)(nil)

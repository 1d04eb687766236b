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

// The flat `sinks:` shape users already write decodes into one typed
// configuration per sink, `name` optional.
func TestConfigYAML(t *testing.T) {
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
    max_response_bytes: 65536
    headers:
      Authorization: Bearer abc
  - type: webhook
    name: crm
    url: https://crm.example.com/hook
    secret_file: /run/secrets/crm
  - type: jsonl
    path: ./data/audit.jsonl
    max_bytes: 1048576
    sync_interval: 50ms
  - type: handoff
    deadline: 2m
`
	var cfg Config
	if err := yaml.UnmarshalWithOptions([]byte(src), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Sinks) != 4 {
		t.Fatalf("%d sinks", len(cfg.Sinks))
	}
	w := cfg.Sinks[0].Webhook
	if w == nil || w.URL != "https://cc.example.com/rein" || w.Mode != ModeBinary || w.SecretEnv != "REIN_WEBHOOK_SECRET" ||
		w.Attempts != 7 || w.BackoffBase != 250*time.Millisecond || w.BackoffMax != time.Minute || w.Timeout != 3*time.Second ||
		w.MaxResponseBytes != 65536 || w.Headers["Authorization"] != "Bearer abc" || w.Name != "" {
		t.Errorf("webhook: %+v", w)
	}
	if w2 := cfg.Sinks[1].Webhook; w2 == nil || w2.Name != "crm" || w2.SecretFile != "/run/secrets/crm" {
		t.Errorf("second webhook: %+v", w2)
	}
	if j := cfg.Sinks[2].JSONL; j == nil || j.Path != "./data/audit.jsonl" || j.MaxBytes != 1<<20 || j.SyncInterval != 50*time.Millisecond {
		t.Errorf("jsonl: %+v", j)
	}
	if h := cfg.Sinks[3].Handoff; h == nil || h.Deadline != 2*time.Minute {
		t.Errorf("handoff: %+v", h)
	}
	cfg.defaults()
	var names []string
	for _, s := range cfg.Sinks {
		names = append(names, s.Name())
	}
	if got := strings.Join(names, ","); got != "webhook,crm,jsonl,handoff" {
		t.Errorf("names %s", got)
	}
}

func TestConfigYAMLErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"missing type", "- url: https://h/x\n", "type is required"},
		{"unknown type", "- type: kafka\n", "unknown sink type"},
		{"option of another kind", "- type: webhook\n  url: https://h/x\n  secret_env: S\n  path: /a\n", "path"},
		{"unknown option", "- type: jsonl\n  path: a\n  colour: red\n", "colour"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sinks []SinkConfig
			err := yaml.UnmarshalWithOptions([]byte(tc.src), &sinks, yaml.Strict())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// Unnamed sinks are named after their kind, then <kind>-2, … skipping
// names taken explicitly; the caller's configuration is not written to.
func TestConfigDefaultNames(t *testing.T) {
	hook := func(name string) SinkConfig {
		return SinkConfig{Webhook: &WebhookConfig{Name: name, URL: "https://h/x", SecretEnv: "S"}}
	}
	cfg := Config{Sinks: []SinkConfig{hook(""), hook("webhook-2"), hook(""), {JSONL: &JSONLConfig{Path: "a"}}, hook("")}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := cfg
	d.defaults()
	var names []string
	for _, s := range d.Sinks {
		names = append(names, s.Name())
	}
	if got := strings.Join(names, ","); got != "webhook,webhook-2,webhook-3,jsonl,webhook-4" {
		t.Errorf("names %s", got)
	}
	if cfg.Sinks[0].Webhook.Name != "" || cfg.Sinks[0].Webhook.Attempts != 0 {
		t.Errorf("defaults leaked into the caller's configuration: %+v", cfg.Sinks[0].Webhook)
	}
	if d.Workers != DefaultWorkers || d.ConsumerConfig().Workers != DefaultWorkers {
		t.Errorf("workers %d", d.Workers)
	}
}

func TestConfigValidate(t *testing.T) {
	hook := func() *WebhookConfig { return &WebhookConfig{URL: "https://h/x", SecretEnv: "S"} }
	named := func(w *WebhookConfig, n string) *WebhookConfig { w.Name = n; return w }
	tests := []struct {
		name    string
		sinks   []SinkConfig
		wantErr string // substring; "" = valid
	}{
		{"empty is valid", nil, ""},
		{"webhook", []SinkConfig{{Webhook: hook()}}, ""},
		{"two webhooks", []SinkConfig{{Webhook: hook()}, {Webhook: hook()}}, ""},
		{"webhook with file secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretFile: "/s"}}}, ""},
		{"webhook with a long inline secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", Secret: []byte(testSecret)}}}, ""},
		{"no kind", []SinkConfig{{}}, "exactly one sink kind"},
		{"two kinds", []SinkConfig{{Webhook: hook(), JSONL: &JSONLConfig{Path: "a"}}}, "exactly one sink kind"},
		{"webhook without secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x"}}}, "exactly one of secret_env and secret_file"},
		{"webhook with both secrets", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", SecretFile: "/s"}}}, "exactly one"},
		{"webhook short secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", Secret: []byte("k")}}}, "at least 32 bytes"},
		{"webhook 31-byte secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", Secret: []byte(testSecret[:31])}}}, "at least 32 bytes"},
		{"webhook bad url", []SinkConfig{{Webhook: &WebhookConfig{URL: "h/x", SecretEnv: "S"}}}, "absolute http(s) URL"},
		{"webhook bad mode", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", Mode: "json"}}}, "mode"},
		{"webhook negative response bound", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", MaxResponseBytes: -1}}}, "max_response_bytes"},
		{"duplicate names", []SinkConfig{{Webhook: named(hook(), "cc")}, {JSONL: &JSONLConfig{Name: "cc", Path: "a"}}}, `name "cc" already used by sinks[0]`},
		{"invalid name", []SinkConfig{{Webhook: named(hook(), "cc hook")}}, "name"},
		{"jsonl without path", []SinkConfig{{JSONL: &JSONLConfig{}}}, "path is required"},
		{"jsonl negative size", []SinkConfig{{JSONL: &JSONLConfig{Path: "a", MaxBytes: -1}}}, "negative"},
		{"two jsonl on one path", []SinkConfig{{JSONL: &JSONLConfig{Path: "a/b"}}, {JSONL: &JSONLConfig{Path: "a/./b"}}}, "already used"},
		{"handoff negative deadline", []SinkConfig{{Handoff: &HandoffConfig{Deadline: -time.Second}}}, "negative"},
		{"two handoffs", []SinkConfig{{Handoff: &HandoffConfig{}}, {Handoff: &HandoffConfig{}}}, "only one handoff"},
		{"errors name the position", []SinkConfig{{Webhook: hook()}, {JSONL: &JSONLConfig{}}}, "sinks[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Sinks: tc.sinks}.Validate()
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
	if err := (Config{Workers: -1}).Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("negative workers: %v", err)
	}
}

func TestBuildSinks(t *testing.T) {
	rcv := &receiver{t: t, secret: []byte(testSecret)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	js := startJetStream(t)
	if _, err := EnsureHandoffStream(testCtx(t), js, 1); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cfg := Config{Sinks: []SinkConfig{
		{Webhook: &WebhookConfig{URL: srv.URL, SecretFile: secretFile, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}},
		{Webhook: &WebhookConfig{URL: srv.URL, SecretEnv: "HOOK_SECRET", Mode: ModeBinary}},
		{JSONL: &JSONLConfig{Path: filepath.Join(dir, "audit.jsonl")}},
		{Handoff: &HandoffConfig{Deadline: time.Hour}},
	}}
	env := map[string]string{"HOOK_SECRET": testSecret}
	sinks, err := BuildSinks(cfg, SinkDeps{JetStream: js, Registerer: reg, Getenv: func(k string) string { return env[k] }, Transcript: transcriptOf})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ev := escalationEvent(t, "acme", "c1", 1)
	for _, s := range sinks {
		names = append(names, s.Name()+":"+s.Kind())
		if err := s.Deliver(testCtx(t), ev); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		if f, ok := s.(Flusher); ok {
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := strings.Join(names, ","); got != "webhook:webhook,webhook-2:webhook,jsonl:jsonl,handoff:handoff" {
		t.Fatalf("sinks %v", got)
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
	for _, n := range []string{"rein_sink_deliveries_total", "rein_sink_delivery_seconds", "rein_escalations_total", "rein_published_total"} {
		if !got[n] {
			t.Errorf("metric %s not gathered (have %v)", n, got)
		}
	}
}

func TestBuildSinksErrors(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tiny\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		deps SinkDeps
		want string
	}{
		{"unset secret env", Config{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretEnv: "NOPE"}}}},
			SinkDeps{Getenv: func(string) string { return "" }}, "unset or empty"},
		{"short secret env", Config{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretEnv: "SHORT"}}}},
			SinkDeps{Getenv: func(string) string { return "k" }}, "at least 32 bytes"},
		{"short secret file", Config{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretFile: short}}}}, SinkDeps{}, "at least 32 bytes"},
		{"missing secret file", Config{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretFile: filepath.Join(dir, "none")}}}}, SinkDeps{}, "secret file"},
		{"handoff without JetStream", Config{Sinks: []SinkConfig{{JSONL: &JSONLConfig{Path: filepath.Join(dir, "a.jsonl")}}, {Handoff: &HandoffConfig{}}}}, SinkDeps{}, "JetStream"},
		{"invalid config", Config{Sinks: []SinkConfig{{}}}, SinkDeps{}, "sink kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sinks, err := BuildSinks(tc.cfg, tc.deps)
			if !errors.Is(err, ErrInvalidConfig) || sinks != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want ErrInvalidConfig mentioning %q", sinks, err, tc.want)
			}
		})
	}
}

var _ http.Handler = (*receiver)(nil)

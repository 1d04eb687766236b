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

// The flat `sinks:` entries decode into one typed configuration per sink.
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
    sweep_interval: 1s
`
	var cfg SinksConfig
	if err := yaml.UnmarshalWithOptions([]byte(src), &cfg, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Sinks) != 4 {
		t.Fatalf("%d sinks", len(cfg.Sinks))
	}
	if w := cfg.Sinks[0].Webhook; w == nil || w.URL != "https://cc.example.com/rein" || w.Mode != ModeBinary || w.SecretEnv != "REIN_WEBHOOK_SECRET" ||
		w.Attempts != 7 || w.BackoffBase != 250*time.Millisecond || w.BackoffMax != time.Minute || w.Timeout != 3*time.Second ||
		w.MaxResponseBytes != 65536 || w.Header["Authorization"] != "Bearer abc" || w.Name != "" {
		t.Errorf("webhook: %+v", w)
	}
	if w := cfg.Sinks[1].Webhook; w == nil || w.Name != "crm" || w.SecretFile != "/run/secrets/crm" {
		t.Errorf("second webhook: %+v", w)
	}
	if j := cfg.Sinks[2].JSONL; j == nil || j.Path != "./data/audit.jsonl" || j.MaxBytes != 1<<20 || j.SyncInterval != 50*time.Millisecond {
		t.Errorf("jsonl: %+v", j)
	}
	if h := cfg.Sinks[3].Handoff; h == nil || h.Deadline != 2*time.Minute || h.SweepInterval != time.Second {
		t.Errorf("handoff: %+v", h)
	}
	var kinds []string
	for _, s := range cfg.Sinks {
		kinds = append(kinds, s.Kind())
	}
	if got := strings.Join(kinds, ","); got != "webhook,webhook,jsonl,handoff" {
		t.Errorf("kinds %s", got)
	}
	if got := strings.Join(cfg.SinkNames(), ","); got != "webhook,crm,jsonl,handoff" {
		t.Errorf("names %s", got)
	}
}

// A key that belongs to another kind of sink is refused, naming the key,
// the kind it belongs to and the keys that do apply; so is a key of no
// kind, a missing or unknown type.
func TestSinksConfigYAMLErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"webhook with a jsonl option", "- type: webhook\n  url: https://h/x\n  secret_env: S\n  path: /a\n",
			[]string{"webhook sink: option path does not apply to this sink type", "it is a jsonl option", "max_response_bytes"}},
		{"jsonl with a webhook option", "- type: jsonl\n  path: a\n  url: https://h\n",
			[]string{"jsonl sink: option url does not apply", "it is a webhook option", "name, path, max_bytes, sync_interval"}},
		{"handoff with a webhook option", "- type: handoff\n  deadline: 1m\n  max_response_bytes: 10\n",
			[]string{"handoff sink: option max_response_bytes does not apply", "name, deadline, sweep_interval"}},
		{"option of no kind", "- type: jsonl\n  path: a\n  colour: red\n", []string{"jsonl sink: unknown option colour"}},
		{"a Go-only field", "- type: webhook\n  url: https://h/x\n  secret_env: S\n  jitter: 0.5\n", []string{"unknown option jitter"}},
		{"missing type", "- url: https://h/x\n", []string{"type is required"}},
		{"unknown type", "- type: kafka\n", []string{`unknown sink type "kafka"`}},
		{"bad value", "- type: jsonl\n  path: a\n  sync_interval: soon\n", []string{"jsonl sink:"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sinks []SinkConfig
			err := yaml.UnmarshalWithOptions([]byte(tc.src), &sinks, yaml.Strict())
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err = %v, want ErrInvalidConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestSinksConfigValidate(t *testing.T) {
	hook := func() *WebhookConfig { return &WebhookConfig{URL: "https://h/x", SecretEnv: "S"} }
	named := func(n string) *WebhookConfig { w := hook(); w.Name = n; return w }
	tests := []struct {
		name    string
		sinks   []SinkConfig
		wantErr string // substring; "" = valid
	}{
		{"empty is valid", nil, ""},
		{"webhook", []SinkConfig{{Webhook: hook()}}, ""},
		{"two webhooks", []SinkConfig{{Webhook: hook()}, {Webhook: hook()}}, ""},
		{"webhook with file secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretFile: "/s"}}}, ""},
		{"webhook with a long inline secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", Secret: []byte(strings.Repeat("k", MinSecretBytes))}}}, ""},
		{"no kind", []SinkConfig{{}}, "exactly one sink kind"},
		{"two kinds", []SinkConfig{{Webhook: hook(), JSONL: &JSONLConfig{Path: "a"}}}, "exactly one sink kind"},
		{"webhook without secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x"}}}, "exactly one of secret_env and secret_file"},
		{"webhook with both secrets", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", SecretFile: "/s"}}}, "exactly one"},
		{"webhook short inline secret", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", Secret: []byte(strings.Repeat("k", MinSecretBytes-1))}}}, "at least 32"},
		{"webhook bad url", []SinkConfig{{Webhook: &WebhookConfig{URL: "h/x", SecretEnv: "S"}}}, "absolute http(s) URL"},
		{"webhook bad mode", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", Mode: "json"}}}, "mode"},
		{"webhook negative response bound", []SinkConfig{{Webhook: &WebhookConfig{URL: "https://h/x", SecretEnv: "S", MaxResponseBytes: -1}}}, "max_response_bytes"},
		{"duplicate names", []SinkConfig{{Webhook: named("cc")}, {JSONL: &JSONLConfig{Name: "cc", Path: "a"}}}, `name "cc" already used by sinks[0]`},
		{"a name taking a default", []SinkConfig{{Webhook: hook()}, {Webhook: named("webhook")}}, `name "webhook" already used by sinks[0]`},
		{"invalid name", []SinkConfig{{Webhook: named("cc hook")}}, "name"},
		{"jsonl without path", []SinkConfig{{JSONL: &JSONLConfig{}}}, "path is required"},
		{"jsonl negative size", []SinkConfig{{JSONL: &JSONLConfig{Path: "a", MaxBytes: -1}}}, "negative"},
		{"two jsonl on one path", []SinkConfig{{JSONL: &JSONLConfig{Path: "a/b"}}, {JSONL: &JSONLConfig{Path: "a/./b"}}}, "already used"},
		{"handoff negative deadline", []SinkConfig{{Handoff: &HandoffConfig{Deadline: -time.Second}}}, "negative"},
		{"two handoffs", []SinkConfig{{Handoff: &HandoffConfig{}}, {Handoff: &HandoffConfig{}}}, "only one handoff"},
		{"errors name the position", []SinkConfig{{Webhook: hook()}, {JSONL: &JSONLConfig{}}}, "sinks[1]"},
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

// Unnamed instances are named after their kind, the n-th of a kind
// <kind>-<n>, whatever names the others were given.
func TestSinkNames(t *testing.T) {
	hook := func(name string) SinkConfig {
		return SinkConfig{Webhook: &WebhookConfig{Name: name, URL: "https://h/x", SecretEnv: "S"}}
	}
	cfg := SinksConfig{Sinks: []SinkConfig{hook(""), hook("crm"), hook(""), {JSONL: &JSONLConfig{Path: "a"}}, {JSONL: &JSONLConfig{Path: "b"}}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.SinkNames(), ","); got != "webhook,crm,webhook-3,jsonl,jsonl-2" {
		t.Errorf("names %s", got)
	}
	if cfg.Sinks[0].Webhook.Name != "" {
		t.Errorf("naming wrote into the configuration: %+v", cfg.Sinks[0].Webhook)
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
		{Webhook: &WebhookConfig{URL: srv.URL, SecretFile: secretFile, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}},
		{Webhook: &WebhookConfig{URL: srv.URL, SecretEnv: "HOOK_SECRET", Mode: ModeBinary}},
		{JSONL: &JSONLConfig{Path: filepath.Join(dir, "audit.jsonl")}},
		{Handoff: &HandoffConfig{Deadline: time.Hour}},
	}}
	env := map[string]string{"HOOK_SECRET": "from-file-0123456789abcdef0123456789"}
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
	if strings.Join(names, ",") != "webhook:webhook,webhook-2:webhook,jsonl:jsonl,handoff:handoff" {
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
	m2 := NewMetrics(reg)
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
		{"unset secret env", SinksConfig{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretEnv: "NOPE"}}}},
			SinkDeps{Getenv: func(string) string { return "" }}},
		{"short secret env", SinksConfig{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretEnv: "SHORT"}}}},
			SinkDeps{Getenv: func(string) string { return "k" }}},
		{"missing secret file", SinksConfig{Sinks: []SinkConfig{{Webhook: &WebhookConfig{URL: "http://h/x", SecretFile: filepath.Join(dir, "none")}}}}, SinkDeps{}},
		{"handoff without JetStream", SinksConfig{Sinks: []SinkConfig{{JSONL: &JSONLConfig{Path: filepath.Join(dir, "a.jsonl")}}, {Handoff: &HandoffConfig{}}}}, SinkDeps{}},
		{"invalid config", SinksConfig{Sinks: []SinkConfig{{}}}, SinkDeps{}},
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

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/streams/natsserver"
)

func configTestCmd() (*cobra.Command, *string, *string, *[]string) {
	var url, dir string
	var stages []string
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().StringVar(&url, "nats-url", "default-url", "")
	cmd.Flags().StringVar(&dir, "data-dir", "./data", "")
	cmd.Flags().StringSliceVar(&stages, "stages", []string{"all"}, "")
	return cmd, &url, &dir, &stages
}

// The command line wins over the environment, which wins over rein.yaml.
func TestConfigPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "rein.yaml")
	yaml := "nats-url: from-file\ndata-dir: /from/file\nstages: [detector, injector]\nstreams:\n  defaults: {replicas: 1}\n"
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadFileConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.hasSection("streams") {
		t.Error("streams section not kept")
	}
	cmd, url, dir, stages := configTestCmd()
	t.Setenv("REIN_DATA_DIR", "/from/env")
	if err := cmd.Flags().Parse([]string{"--nats-url", "from-flag"}); err != nil {
		t.Fatal(err)
	}
	if err := applySources(cmd, cfg); err != nil {
		t.Fatal(err)
	}
	if *url != "from-flag" || *dir != "/from/env" || strings.Join(*stages, ",") != "detector,injector" {
		t.Errorf("url %q dir %q stages %v", *url, *dir, *stages)
	}
}

func TestConfigUnknownKeyAndBadYAML(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("nats-ulr: x\n"), 0o644)
	cfg, err := loadFileConfig(bad)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _, _, _ := configTestCmd()
	if err := applySources(cmd, cfg); err == nil || !strings.Contains(err.Error(), "nats-ulr") {
		t.Errorf("unknown key: %v", err)
	}
	// A section nothing reads is refused too, not silently ignored.
	for _, section := range []string{"detector", "agent", "tenants"} {
		f := filepath.Join(dir, section+".yaml")
		_ = os.WriteFile(f, []byte(section+":\n  something: 1\n"), 0o644)
		cfg, err := loadFileConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		cmd, _, _, _ := configTestCmd()
		if err := applySources(cmd, cfg); err == nil || !strings.Contains(err.Error(), section) || !strings.Contains(err.Error(), ".yaml:1:") {
			t.Errorf("section %s: %v, want it refused", section, err)
		}
	}
	broken := filepath.Join(dir, "broken.yaml")
	_ = os.WriteFile(broken, []byte("a: [1,\n"), 0o644)
	if _, err := loadFileConfig(broken); err == nil {
		t.Error("broken YAML accepted")
	}
	if _, err := loadFileConfig(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file accepted")
	}
}

// rein.yaml's sinks: decode into one typed configuration per sink; a key
// of another sink type is refused, naming the key and the type it belongs
// to.
func TestConfigSinks(t *testing.T) {
	dir := t.TempDir()
	load := func(yaml string) (*fileConfig, error) {
		t.Helper()
		p := filepath.Join(dir, "rein.yaml")
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return loadFileConfig(p)
	}
	cfg, err := load("sinks:\n  - type: webhook\n    url: https://cc.example/rein\n    secret_env: S\n    max_response_bytes: 1024\n    timeout: 3s\n  - type: jsonl\n    path: /var/lib/rein/audit.jsonl\n")
	if err != nil {
		t.Fatal(err)
	}
	sinks, err := sinksConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sinks.Sinks) != 2 || sinks.Sinks[0].Webhook == nil || sinks.Sinks[0].Webhook.MaxResponseBytes != 1024 ||
		sinks.Sinks[0].Webhook.Timeout != 3*time.Second || sinks.Sinks[1].JSONL == nil {
		t.Fatalf("sinks %+v", sinks.Sinks)
	}
	cfg, err = load("sinks:\n  - type: webhook\n    url: https://cc.example/rein\n    secret_env: S\n    path: /tmp/audit.jsonl\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sinksConfig(cfg); err == nil || !strings.Contains(err.Error(), "option path does not apply") || !strings.Contains(err.Error(), "jsonl option") {
		t.Fatalf("a jsonl key on a webhook sink: %v", err)
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rein.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// An unknown key, a repeated key and an unknown field of a section each
// fail with the line they are on.
func TestConfigErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "data-dir: /d\n\nnats-ulr: x\n", []string{"rein.yaml:3:", `unknown key "nats-ulr"`, "did you mean nats-url?"}},
		{"unknown section", "stages: [detector]\ndetector:\n  timeout: 1s\n", []string{"rein.yaml:2:", `"detector"`}},
		{"key twice", "data-dir: /a\ndata-dir: /b\n", []string{"[2:1]", "data-dir"}},
		{"unknown stream field", "streams:\n  defaults:\n    max_agee: 1h\n", []string{"section streams", "[3:5]", "max_agee"}},
		{"mapping for a flag", "data-dir:\n  a: 1\n", []string{"rein.yaml:1:", "not a mapping"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, context.Background(), "config", "show", "--config", writeConfig(t, tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The model settings obey the same precedence as every other setting:
// flag > environment (REIN_LLM_* included) > file.
func TestConfigProviderPrecedence(t *testing.T) {
	file := writeConfig(t, "provider: anthropic\nmodel: file-model\nbase-url: http://file\n")
	t.Setenv("REIN_LLM_PROVIDER", "openai")
	t.Setenv("REIN_LLM_MODEL", "env-model")
	t.Setenv("REIN_LLM_API_KEY", "sk-very-secret")
	t.Setenv("REIN_LLM_BASE_URL", "")
	os.Unsetenv("REIN_LLM_BASE_URL")
	out, err := runCLI(t, context.Background(), "config", "show", "--config", file, "--model", "flag-model")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"provider: openai  # env REIN_LLM_PROVIDER",
		"model: flag-model  # flag",
		"base_url: http://file  # file " + file + ":3",
		// A provider configured and --module left alone: the llm module.
		"module: llm  # default with a model provider (openai) configured",
		`api_key: "***"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config show lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-very-secret") {
		t.Error("config show prints the API key")
	}
}

// --module given, by any source, is never overridden by the provider.
func TestConfigModuleGivenStays(t *testing.T) {
	t.Setenv("REIN_LLM_PROVIDER", "openai")
	t.Setenv("REIN_MODULE", "rules")
	out, err := runCLI(t, context.Background(), "config", "show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "module: rules  # env REIN_MODULE") {
		t.Errorf("module not rules from the environment:\n%s", out)
	}
}

// config show is valid YAML with the effective values, streams' retention
// from the file, and secrets redacted.
func TestConfigShowYAML(t *testing.T) {
	file := writeConfig(t, "nats-token: tok-secret\nstreams:\n  defaults: {max_age: 720h}\n  streams:\n    REIN_TURNS: {max_bytes: 1000000}\n")
	t.Setenv("REIN_LLM_PROVIDER", "")
	out, err := runCLI(t, context.Background(), "config", "show", "--config", file, "--stages", "detector,injector")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Module  string            `yaml:"module"`
		Stages  string            `yaml:"stages"`
		Streams map[string]string `yaml:"streams"`
		Flags   map[string]any    `yaml:"flags"`
	}
	if err := yaml.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, out)
	}
	if doc.Module != "rules" || doc.Stages != "detector,injector" {
		t.Errorf("module %q stages %q", doc.Module, doc.Stages)
	}
	if got := doc.Streams["REIN_TURNS"]; !strings.Contains(got, "max_age 720h") || !strings.Contains(got, "max_bytes 1000000") {
		t.Errorf("REIN_TURNS retention %q", got)
	}
	if strings.Contains(out, "tok-secret") || doc.Flags["nats-token"] != "***" {
		t.Errorf("token not redacted: %v", doc.Flags["nats-token"])
	}
}

// config show tells the truth (issue 35): the embedded server's nkeys are
// no "none", sinks from the file say so, and with no streams section every
// stream is bounded by the default age.
func TestConfigShowTellsTheTruth(t *testing.T) {
	file := writeConfig(t, "sinks:\n  - type: jsonl\n    path: /tmp/rein-audit.jsonl\n")
	t.Setenv("REIN_LLM_PROVIDER", "")
	out, err := runCLI(t, context.Background(), "config", "show", "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		key, rest, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch key {
		case "nats_auth":
			if !strings.Contains(rest, "nkeys") {
				t.Errorf("nats_auth of the embedded server: %q, want nkeys", line)
			}
		case "sinks":
			if !strings.Contains(rest, "# file") {
				t.Errorf("sinks from the file shown as %q", line)
			}
		case "REIN_TURNS", "REIN_DLQ", "REIN_OUTCOMES":
			if !strings.Contains(rest, "max_age "+natsserver.DefaultMaxAge.String()) {
				t.Errorf("%s retention %q, want the default age bound", key, line)
			}
		}
	}
	if !strings.Contains(out, "nats_auth:") || !strings.Contains(out, "REIN_DLQ:") {
		t.Fatalf("config show lacks nats_auth or REIN_DLQ:\n%s", out)
	}
}

// serve's first log line is the effective configuration.
func TestEffectiveConfigurationLogged(t *testing.T) {
	t.Setenv("REIN_LLM_API_KEY", "sk-very-secret")
	var sf serverFlags
	var so stageOptions
	var stages []string
	cmd := &cobra.Command{Use: "serve"}
	bindServe(cmd, &sf, &so, &stages)
	file, names, err := resolveServe(cmd, &so, stages)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := provisionConfig(file)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("effective configuration", logAttrs(effectiveSettings(cmd, &sf, &so, names, file, prov))...)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"module", "provider", "model", "taxonomy", "domain", "stages", "nats", "retention"} {
		if _, ok := line[k]; !ok {
			t.Errorf("log line lacks %s: %s", k, buf.String())
		}
	}
	if ret, _ := line["retention"].(map[string]any); ret["REIN_TURNS"] == nil {
		t.Errorf("retention lacks REIN_TURNS: %v", line["retention"])
	}
	if strings.Contains(buf.String(), "sk-very-secret") {
		t.Error("API key logged")
	}
}

// A provider only inferred from REIN_LLM_SCRIPT (which may drive the agent
// alone) leaves serve's module at rules.
func TestConfigScriptAloneKeepsRules(t *testing.T) {
	t.Setenv("REIN_LLM_PROVIDER", "")
	os.Unsetenv("REIN_LLM_PROVIDER")
	t.Setenv("REIN_LLM_SCRIPT", "agent.yaml")
	out, err := runCLI(t, context.Background(), "config", "show")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "module: rules  # default") || !strings.Contains(out, "provider: scripted  # inferred from REIN_LLM_SCRIPT") {
		t.Errorf("script alone:\n%s", out)
	}
}

// rein config check refuses each configuration serve used to refuse only
// after its NATS server started (or without a line), with the file and
// line, and serve refuses it before anything starts (issue 35).
func TestConfigCheckNamesTheLine(t *testing.T) {
	// Unset, not empty: an empty REIN_LLM_PROVIDER would override the
	// file's provider.
	for _, v := range []string{"REIN_LLM_PROVIDER", "REIN_LLM_MODEL", "REIN_LLM_API_KEY", "OPENAI_API_KEY", "REIN_MODULE"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"a stream rein does not have", "http: 127.0.0.1:0\nstreams:\n  streams:\n    REIN_TURN: {max_age: 1h}\n", []string{":4:", "REIN_TURN", "no such rein stream"}},
		{"a sink of an unknown type", "sinks:\n  - type: webhok\n    url: https://cc.example/rein\n", []string{":1:", "webhok"}},
		{"a sink missing its secret", "sinks:\n  - type: jsonl\n    path: /tmp/rein-check.jsonl\n  - type: webhook\n    url: https://cc.example/rein\n", []string{":4:", "sinks[1]", "secret"}},
		{"a provider without a model", "provider: openai\n", []string{"needs a model", "provider: file ", "rein.yaml:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeConfig(t, tc.file)
			_, err := runCLI(t, context.Background(), "config", "check", "--config", file)
			if err == nil {
				t.Fatal("config check accepted it")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// serve refuses it the same way, before its server starts: no
			// data directory is made.
			data := filepath.Join(t.TempDir(), "data")
			_, serr := runCLI(t, context.Background(), "serve", "--config", file, "--data-dir", data, "--nats-listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
			if serr == nil || serr.Error() != err.Error() {
				t.Errorf("serve: %v, want the check's error %v", serr, err)
			}
			if _, statErr := os.Stat(data); !os.IsNotExist(statErr) {
				t.Errorf("serve made %s before refusing the configuration", data)
			}
		})
	}
	out, err := runCLI(t, context.Background(), "config", "check", "--config", writeConfig(t, "sinks:\n  - type: jsonl\n    path: /tmp/rein-check.jsonl\n"))
	if err != nil || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("a good configuration: %q, %v", out, err)
	}
}

// An experiments file serve would refuse (a holdout over the 0.5 cap) is
// refused by config check, and by serve before anything starts.
func TestConfigCheckExperimentsFile(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "experiments.yaml")
	if err := os.WriteFile(exp, []byte("key: 0123456789abcdef-key\ntenants:\n  acme: {name: e1, holdout: 0.9}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, "experiments: "+exp+"\n")
	_, err := runCLI(t, context.Background(), "config", "check", "--config", file)
	if err == nil || !strings.Contains(err.Error(), "--experiments") || !strings.Contains(err.Error(), "holdout") {
		t.Fatalf("config check: %v", err)
	}
	data := filepath.Join(dir, "data")
	if _, serr := runCLI(t, context.Background(), "serve", "--config", file, "--data-dir", data, "--nats-listen", "127.0.0.1:0", "--http", "127.0.0.1:0"); serr == nil || serr.Error() != err.Error() {
		t.Errorf("serve: %v, want %v", serr, err)
	}
	if err := os.WriteFile(exp, []byte("key: 0123456789abcdef-key\ntenants:\n  acme: {name: e1, holdout: 0.1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runCLI(t, context.Background(), "config", "check", "--config", file); err != nil || !strings.HasPrefix(out, "ok: ") {
		t.Errorf("a good experiments file: %q, %v", out, err)
	}
}

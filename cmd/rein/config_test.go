package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
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
	if cfg.section("streams") == nil {
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
		if err := applySources(cmd, cfg); err == nil || !strings.Contains(err.Error(), section) {
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

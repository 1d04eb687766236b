package natsserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// TestAuthorizationConfigForAnExternalServer: the block `rein keys
// server-config` prints loads into a stock nats-server, and there every
// identity has the embedded server's permissions: the detector stores
// detections and their tasks, not the agent's steps; a tenant's ingress sends only that tenant's
// turns to the ingest, and stores nothing itself; no key, no connection.
func TestAuthorizationConfigForAnExternalServer(t *testing.T) {
	dir := t.TempDir()
	if _, err := natsserver.AddTenantIngress(dir, "acme"); err != nil {
		t.Fatal(err)
	}
	keys, err := natsserver.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	var block bytes.Buffer
	if err := keys.WriteAuthorization(&block); err != nil {
		t.Fatal(err)
	}
	try := startExternalServer(t, block.String())
	det := keys.SeedFile(natsserver.IdentityDetector)
	if !try(det, bus.DetectionSubject("acme", "c1")) || !try(det, bus.TaskSubject("acme", "c1")) || try(det, bus.StepSubject("acme", "c1")) {
		t.Error("the detector's permissions differ from the embedded server's")
	}
	acme := keys.SeedFile("ingress-acme")
	if !try(acme, bus.IngestSubject("acme", "c1", schemas.RoleUser)) || try(acme, bus.IngestSubject("globex", "c1", schemas.RoleUser)) ||
		try(acme, bus.TurnSubject("acme", "c1", schemas.RoleUser)) {
		t.Error("acme's ingress identity is not bound to acme")
	}
	if try("", bus.TurnSubject("acme", "c1", schemas.RoleUser)) {
		t.Error("a connection without a key was accepted")
	}
}

// TestHelmValuesForTheNATSChart: the values `rein keys server-config
// --helm-values` prints hold no seed, and their config.merge (which the
// official NATS chart merges into nats.conf) loads into a stock
// nats-server with the embedded server's permissions, as the block does.
func TestHelmValuesForTheNATSChart(t *testing.T) {
	dir := t.TempDir()
	keys, err := natsserver.EnsureKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := keys.WriteHelmValues(&out); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config struct {
			Merge map[string]any `yaml:"merge"`
		} `yaml:"config"`
	}
	if err := yaml.Unmarshal(out.Bytes(), &values); err != nil {
		t.Fatalf("values do not decode: %v\n%s", err, out.String())
	}
	for _, id := range natsserver.Identities {
		seed, err := os.ReadFile(keys.SeedFile(id))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out.Bytes(), bytes.TrimSpace(seed)) {
			t.Fatalf("the values hold the seed of %s", id)
		}
		if !strings.Contains(out.String(), keys.PublicKey(id)) {
			t.Errorf("the values lack %s's public key", id)
		}
	}
	// The chart merges config.merge into its config and renders it as JSON
	// without HTML escaping (nats.formatConfig: toPrettyRawJson), which
	// nats.conf accepts; here its members at the top level.
	var merge bytes.Buffer
	enc := json.NewEncoder(&merge)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(values.Config.Merge); err != nil {
		t.Fatal(err)
	}
	body := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(merge.String()), "{"), "}")
	try := startExternalServer(t, body)
	det := keys.SeedFile(natsserver.IdentityDetector)
	if !try(det, bus.DetectionSubject("acme", "c1")) {
		t.Error("the detector may not store a detection")
	}
	if !try(det, bus.TaskSubject("acme", "c1")) {
		t.Error("the detector may not store its task")
	}
	if try(det, bus.StepSubject("acme", "c1")) {
		t.Error("the detector may store an agent step")
	}
	if try("", bus.TurnSubject("acme", "c1", schemas.RoleUser)) {
		t.Error("a connection without a key was accepted")
	}
}

// startExternalServer starts a stock nats-server whose configuration is a
// loopback listener, JetStream, and auth; it returns a probe that reports
// whether a connection with a seed file ("" for none) may publish to a
// subject.
func startExternalServer(t *testing.T, auth string) func(seed, subject string) bool {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := "listen: 127.0.0.1:-1\njetstream { store_dir: " + filepath.ToSlash(filepath.Join(t.TempDir(), "js")) + " }\n" + auth + "\n"
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("nats-server does not load the configuration: %v\n%s", err, body)
	}
	opts.NoLog, opts.NoSigs = true, true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	url := s.ClientURL()
	return func(seed, subject string) bool {
		t.Helper()
		nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: url, NkeyFile: seed})
		if err != nil {
			if seed == "" {
				return false
			}
			t.Fatalf("connect with %s: %v", seed, err)
		}
		defer nc.Close()
		if err := nc.Publish(subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return nc.LastError() == nil
	}
}

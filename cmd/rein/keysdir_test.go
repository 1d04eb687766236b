package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	rtest "github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/consume"
	"github.com/reinception/rein/streams/natsserver"
)

// An external nats-server configured with `rein keys server-config`: rein
// provision runs as admin, then rein serve runs every stage under its own
// identity from --nats-keys-dir, the process itself as reader (no admin
// seed in its directory), and a turn goes all the way through. Before
// --nats-keys-dir, every connection of a process on an external NATS used
// one set of credentials, so a deployment gave every stage one user.
func TestStagesRunUnderTheirOwnIdentitiesOnAnExternalServer(t *testing.T) {
	t.Parallel()
	t.Run("one partition", func(t *testing.T) { stagesUnderOwnIdentities(t, 1) })
	// Partitioned: each stage's partition durables and its key in the
	// members bucket are within its identity's permissions.
	t.Run("two partitions", func(t *testing.T) { stagesUnderOwnIdentities(t, 2) })
}

func stagesUnderOwnIdentities(t *testing.T, partitions int) {
	url, keys := externalServerWithReinAuth(t)
	// Two mounts, as a deployment would make them: admin's alone for the
	// provisioning job; every other identity for the stage process.
	adminDir := seedDir(t, keys, natsserver.IdentityAdmin)
	var others []string
	for _, id := range natsserver.Identities {
		if id != natsserver.IdentityAdmin {
			others = append(others, id)
		}
	}
	stageDir := seedDir(t, keys, others...)
	taskKey := filepath.Join(t.TempDir(), "task-key")
	if err := os.WriteFile(taskKey, []byte(strings.Repeat("t", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	serveArgs := []string{"serve", "--nats-url", url, "--nats-keys-dir", stageDir, "--task-key", taskKey, "--data-dir", t.TempDir(),
		"--agent-script", "../../internal/app/demo/demodata/agent.yaml", "--log-level", "error"}

	// Started before the streams exist (a stage pod ahead of the
	// provisioning job), the process may not create them: it waits, not
	// ready, saying why, instead of exiting into a restart loop.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	httpAddr := freePort(t)
	served := make(chan error, 1)
	serveCtx, stopServe := context.WithCancel(ctx)
	go func() {
		_, err := runCLI(t, serveCtx, append(serveArgs, "--http", httpAddr)...)
		served <- err
	}()
	defer func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	rtest.CheckFor(t, time.Minute, "serve waits for rein provision on /readyz", func() bool {
		select {
		case err := <-served:
			t.Fatalf("serve exited before provisioning: %v", err)
		default:
		}
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), "waiting for rein provision")
	})
	out, err := runCLI(t, ctx, "provision", "--nats-url", url, "--nats-keys-dir", adminDir, "--partitions", strconv.Itoa(partitions))
	if err != nil {
		t.Fatalf("provision: %v", err)
	}
	if !strings.Contains(out, bus.StreamTurns) {
		t.Fatalf("provision printed no streams:\n%s", out)
	}
	rtest.CheckFor(t, time.Minute, "serve ready once provisioned", func() bool { return httpReady(httpAddr) })

	// The platform's turn, published under the ingress identity.
	if _, err := runCLI(t, ctx, "publish", "--nats-url", url, "--nats-nkey", filepath.Join(stageDir, natsserver.IdentityIngress+".nk"),
		"--tenant", "acme", "--conversation", "c1", "--next-turn", "--text", "I want to cancel my reservation"); err != nil {
		t.Fatalf("publish: %v", err)
	}
	nc, err := natsserver.Connect(natsserver.ConnectConfig{URL: url, NkeyFile: keys.SeedFile(natsserver.IdentityAdmin)})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	rtest.CheckFor(t, time.Minute, "the agent's reply stored", func() bool {
		s, err := js.Stream(ctx, bus.StreamTurns)
		if err != nil {
			return false
		}
		_, found, err := streams.LastEvent(ctx, s, bus.TurnSubject("acme", "c1", "agent"))
		return err == nil && found
	})
	s, err := js.Stream(ctx, bus.StreamTasks)
	if err != nil {
		t.Fatal(err)
	}
	if got := streams.StreamPartitions(s.CachedInfo().Config); got != partitions {
		t.Errorf("REIN_TASKS has %d partitions, want %d", got, partitions)
	}
	if partitions == 1 {
		return
	}
	// The reader sees which replica works each partition.
	out, err = runCLI(t, ctx, "streams", "--json", "--nats-url", url, "--nats-nkey", filepath.Join(stageDir, natsserver.IdentityReader+".nk"))
	if err != nil {
		t.Fatalf("rein streams as reader: %v\n%s", err, out)
	}
	var rows []streamReport
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("rein streams --json: %v\n%s", err, out)
	}
	worked := 0
	for _, r := range rows {
		for _, c := range r.Consumers {
			if _, _, ok := consume.ParsePartitionDurable(c.Name); ok && c.WorkedBy != nil && c.WorkedBy.PID == os.Getpid() {
				worked++
			}
		}
	}
	// The detector's and the agent worker's partitions, all worked by this
	// test's serve (the injector runs fused into the detector, serve's
	// default, with no durable of its own).
	if worked != 2*partitions {
		t.Errorf("rein streams names the replica of %d partition durables, want %d:\n%s", worked, 2*partitions, out)
	}
}

// A stage's process holds only its own seed and reader's, as deploy/compose
// and deploy/k8s mount them: it runs its stage, and takes no turns over
// HTTP (it has no ingress seed; the ingress Deployment does). Before, every
// serve process needed ingress.nk and exited without it.
func TestAStageProcessNeedsOnlyItsOwnSeedAndReaders(t *testing.T) {
	url, keys := externalServerWithReinAuth(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := runCLI(t, ctx, "provision", "--nats-url", url, "--nats-keys-dir", seedDir(t, keys, natsserver.IdentityAdmin)); err != nil {
		t.Fatalf("provision: %v", err)
	}
	dir := seedDir(t, keys, natsserver.IdentityReader, natsserver.IdentityDetector)
	// The detector signs the tasks it stores: it holds the task key too.
	taskKey := filepath.Join(t.TempDir(), "task-key")
	if err := os.WriteFile(taskKey, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := freePort(t)
	defer runServe(t, httpAddr, time.Minute, "--stages", "detector", "--module", "rules", "--nats-url", url,
		"--nats-keys-dir", dir, "--task-key", taskKey, "--http", httpAddr, "--data-dir", t.TempDir(), "--log-level", "error")()
	resp, err := http.Post("http://"+httpAddr+"/v1/turns", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode/100 == 2 {
		t.Errorf("POST /v1/turns answered %d on a process without the ingress seed", resp.StatusCode)
	}
}

// externalServerWithReinAuth starts a stock nats-server configured with
// `rein keys server-config`'s block and returns its URL and the keyring.
func externalServerWithReinAuth(t *testing.T) (string, *natsserver.Keyring) {
	t.Helper()
	keys, err := natsserver.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return startServerWithReinAuth(t, keys, "127.0.0.1:-1"), keys
}

// startServerWithReinAuth starts a stock nats-server with JetStream on
// listen, configured with keys' authorization block, and returns its URL.
func startServerWithReinAuth(t *testing.T, keys *natsserver.Keyring, listen string) string {
	t.Helper()
	var block bytes.Buffer
	if err := keys.WriteAuthorization(&block); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nats.conf")
	body := "listen: " + listen + "\njetstream { store_dir: " + filepath.ToSlash(filepath.Join(t.TempDir(), "js")) + " }\n" + block.String()
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return ns.ClientURL()
}

// rein provision, started before its NATS listens (a job started with the
// cluster), keeps trying and provisions once the server is up; it used to
// exit at the first refused connection.
func TestProvisionWaitsForNATSToListen(t *testing.T) {
	keys, err := natsserver.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	cc := natsserver.ConnectConfig{URL: "nats://" + addr, NkeyFile: keys.SeedFile(natsserver.IdentityAdmin)}
	failed := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		nc, err := connectRetrying(t.Context(), cc, time.Minute, func(error) {
			select {
			case failed <- struct{}{}:
			default:
			}
		})
		if nc != nil {
			nc.Close()
		}
		done <- err
	}()
	select {
	case <-failed: // nothing listens yet
	case err := <-done:
		t.Fatalf("connected with nothing listening: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no failed attempt reported")
	}
	startServerWithReinAuth(t, keys, addr)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("once the server listened: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("still not connected 30 s after the server started")
	}
}

// seedDir copies the seeds of ids into a new directory, as a deployment
// mounts them into one process.
func seedDir(t *testing.T, keys *natsserver.Keyring, ids ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, id := range ids {
		seed, err := os.ReadFile(keys.SeedFile(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id+".nk"), seed, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

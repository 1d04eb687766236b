package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats-server/v2/server"

	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/streams/natsserver"
)

const composeDir = "compose"

// composeService is what the tests check of one service, as the compose
// specification's own loader reads it (compose-go: merge keys resolved,
// the file validated against the compose schema, short and long syntaxes
// normalised).
type composeService struct {
	Image       string
	Command     []string
	User        string
	ReadOnly    bool
	Environment map[string]string
	Volumes     []string // source:target[:ro], a source in the compose directory as ./path
	Ports       []string // host_ip:published:target
	Secrets     []composeSecret
	DependsOn   map[string]string // service → condition
	Replicas    int               // deploy.replicas; 0 when unset
	EnvFiles    []composeEnvFile
}

// composeEnvFile is a service's env_file.
type composeEnvFile struct {
	Path     string // as ./path in the compose directory
	Required bool
}

// composeSecret is a service's secret.
type composeSecret struct {
	Source, Target, UID, GID string
	Mode                     int
}

// loadCompose loads compose.yaml with compose-go, as `docker compose`
// would (no daemon needed), and returns its services and the files of its
// declared secrets.
func loadCompose(t *testing.T) (map[string]composeService, map[string]string) {
	t.Helper()
	return loadComposeIn(t, composeDir, nil)
}

// loadComposeIn loads dir/compose.yaml with the given profiles active.
func loadComposeIn(t *testing.T, dir string, profiles []string) (map[string]composeService, map[string]string) {
	t.Helper()
	dir, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loader.LoadWithContext(t.Context(), types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "compose.yaml")}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) { o.SetProjectName("rein", true); o.Profiles = profiles })
	if err != nil {
		t.Fatalf("compose.yaml does not load as the compose specification says: %v", err)
	}
	rel := func(src string) string {
		if r, err := filepath.Rel(dir, src); err == nil && filepath.IsAbs(src) && !strings.HasPrefix(r, "..") {
			return "./" + filepath.ToSlash(r)
		}
		if r, err := filepath.Rel(dir, src); err == nil && filepath.IsAbs(src) {
			return filepath.ToSlash(r)
		}
		return src
	}
	services := map[string]composeService{}
	for name, sc := range p.Services {
		s := composeService{Image: sc.Image, Command: sc.Command, User: sc.User, ReadOnly: sc.ReadOnly,
			Environment: map[string]string{}, DependsOn: map[string]string{}}
		for k, v := range sc.Environment {
			if v != nil {
				s.Environment[k] = *v
			}
		}
		for _, v := range sc.Volumes {
			spec := rel(v.Source) + ":" + v.Target
			if v.Source == "" {
				spec = v.Target
			}
			if v.ReadOnly {
				spec += ":ro"
			}
			s.Volumes = append(s.Volumes, spec)
		}
		for _, pc := range sc.Ports {
			s.Ports = append(s.Ports, fmt.Sprintf("%s:%s:%d", pc.HostIP, pc.Published, pc.Target))
		}
		for _, sec := range sc.Secrets {
			cs := composeSecret{Source: sec.Source, Target: sec.Target, UID: sec.UID, GID: sec.GID}
			if sec.Mode != nil {
				cs.Mode = int(*sec.Mode)
			}
			s.Secrets = append(s.Secrets, cs)
		}
		for dep, d := range sc.DependsOn {
			s.DependsOn[dep] = d.Condition
		}
		for _, ef := range sc.EnvFiles {
			s.EnvFiles = append(s.EnvFiles, composeEnvFile{Path: rel(ef.Path), Required: bool(ef.Required)})
		}
		if sc.Deploy != nil && sc.Deploy.Replicas != nil {
			s.Replicas = *sc.Deploy.Replicas
		}
		services[name] = s
	}
	secrets := map[string]string{}
	for name, sc := range p.Secrets {
		secrets[name] = rel(sc.File)
	}
	return services, secrets
}

// keysDir is where the compose services mount rein's identity seeds
// (REIN_NATS_KEYS_DIR).
const keysDir = "/run/rein-keys"

// The compose file (decoded with its anchors and merge keys resolved, as
// compose does) runs a 3-node NATS cluster with JetStream and each rein
// stage as its own service, non-root, against R3 streams, with flags rein
// has; only loopback ports are published.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	services, secrets := loadCompose(t)
	if regexp.MustCompile(`(?i)NATS_(USER|PASSWORD)`).Match(b) {
		t.Error("compose.yaml still gives NATS a user or password; rein's services connect with their nkey identities")
	}
	nats := 0
	stages := map[string]bool{}
	partitions := map[string]bool{}
	var admins []string
	for name, s := range services {
		where := "compose service " + name
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %s beyond loopback", where, p)
			}
		}
		switch {
		case strings.HasPrefix(s.Image, "nats:"):
			nats++
			if s.Environment["NATS_SERVER_NAME"] != name {
				t.Errorf("%s: NATS_SERVER_NAME %q, want its service name", where, s.Environment["NATS_SERVER_NAME"])
			}
			if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
				t.Errorf("%s: JetStream storage /data is not a volume", where)
			}
			if !slices.Contains(s.Volumes, "./secrets/auth.conf:/etc/nats/auth.conf:ro") {
				t.Errorf("%s: does not mount the generated secrets/auth.conf beside nats.conf", where)
			}
		case strings.Contains(s.Image, "rein"):
			checkArgs(t, where, s.Command)
			var env []string
			for k := range s.Environment {
				env = append(env, k)
			}
			checkEnv(t, where, env)
			if s.Environment["REIN_STREAM_REPLICAS"] != "3" {
				t.Errorf("%s: streams must be R3 on the cluster", where)
			}
			// provision creates the streams with these partitions; the
			// stages' replicas share them.
			partitions[s.Environment["REIN_PARTITIONS"]] = true
			if n, _ := strconv.Atoi(s.Environment["REIN_PARTITIONS"]); n < 2 || n < s.Replicas {
				t.Errorf("%s: REIN_PARTITIONS %q must be at least 2 and at least its %d replicas, or replicas only stand by", where, s.Environment["REIN_PARTITIONS"], s.Replicas)
			}
			if n := strings.Count(s.Environment["REIN_NATS_URL"], "nats://"); n != 3 {
				t.Errorf("%s: REIN_NATS_URL names %d servers, want the 3 nodes", where, n)
			}
			if s.User == "" || strings.HasPrefix(s.User, "0") || s.User == "root" || !s.ReadOnly {
				t.Errorf("%s: must run non-root (user %q) on a read-only root", where, s.User)
			}
			for _, sec := range s.Secrets {
				if _, ok := secrets[sec.Source]; !ok {
					t.Errorf("%s: secret %s is not declared", where, sec.Source)
				}
			}
			if ids := checkComposeIdentities(t, where, s, secrets); slices.Contains(ids, natsserver.IdentityAdmin) {
				admins = append(admins, name)
			}
			if i := slices.Index(s.Command, "--stages"); i >= 0 && i+1 < len(s.Command) {
				stages[s.Command[i+1]] = true
			}
		}
	}
	if nats != 3 {
		t.Errorf("%d NATS services, want 3", nats)
	}
	if len(partitions) != 1 {
		t.Errorf("rein services disagree on REIN_PARTITIONS: %v", slices.Collect(maps.Keys(partitions)))
	}
	if !slices.Equal(admins, []string{"provision"}) {
		t.Errorf("services holding admin.nk: %v; want the provision service alone", admins)
	}
	for _, st := range []string{"detector", "injector", "agentworker", "escalation"} {
		if !stages[st] {
			t.Errorf("no compose service runs the %s stage", st)
		}
	}
	for _, p := range []string{"prometheus", "grafana"} {
		if _, ok := services[p]; !ok {
			t.Errorf("no %s service", p)
		}
	}
}

// checkComposeIdentities checks the seeds a rein service mounts: reader's
// and its stage's for a stage (ingress's for --stages none), admin's alone
// for the provision service, each read-only for the service's user in
// REIN_NATS_KEYS_DIR; a stage starts once provision has completed. It
// returns the identities mounted.
func checkComposeIdentities(t *testing.T, where string, s composeService, declared map[string]string) []string {
	t.Helper()
	if s.Environment["REIN_NATS_KEYS_DIR"] != keysDir {
		t.Errorf("%s: REIN_NATS_KEYS_DIR %q, want %s", where, s.Environment["REIN_NATS_KEYS_DIR"], keysDir)
	}
	var ids []string
	for _, sec := range s.Secrets {
		dir, file := path.Split(sec.Target)
		id, ok := strings.CutSuffix(file, ".nk")
		if path.Clean(dir) != keysDir || !ok {
			continue
		}
		ids = append(ids, id)
		if want := "./secrets/nats-keys/" + file; declared[sec.Source] != want {
			t.Errorf("%s: %s is secret %s, from %q; want %s", where, sec.Target, sec.Source, declared[sec.Source], want)
		}
		if sec.Mode != 0o400 || sec.UID+":"+sec.GID != s.User {
			t.Errorf("%s: %s: mode %#o uid %q gid %q; want 0400 owned by the service's user %s", where, sec.Target, sec.Mode, sec.UID, sec.GID, s.User)
		}
	}
	slices.Sort(ids)
	var want []string
	if s.Command[0] == "provision" {
		want = []string{natsserver.IdentityAdmin}
	} else {
		stage := "none"
		if i := slices.Index(s.Command, "--stages"); i >= 0 && i+1 < len(s.Command) {
			stage = s.Command[i+1]
		}
		own := stage
		if stage == "none" {
			own = natsserver.IdentityIngress
		}
		want = []string{own, natsserver.IdentityReader}
		slices.Sort(want)
		if s.DependsOn["provision"] != "service_completed_successfully" {
			t.Errorf("%s: does not wait for the provision service to complete (depends_on %v)", where, s.DependsOn)
		}
	}
	if !slices.Equal(ids, want) {
		t.Errorf("%s mounts the seeds of %v; want exactly %v", where, ids, want)
	}
	return ids
}

// nats.conf clusters the three nodes with JetStream and authentication;
// Prometheus scrapes every rein service with rein's rules.
func TestComposeNATSAndPrometheus(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join(composeDir, "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"jetstream", "cluster", "nats-route://nats1:6222", "nats-route://nats2:6222",
		"nats-route://nats3:6222", "server_name: $NATS_SERVER_NAME", "include ./auth.conf"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nats.conf lacks %q", want)
		}
	}
	checkNATSConfLoads(t, conf)
	var prom struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			DNSSD []struct {
				Names []string `yaml:"names"`
				Port  int      `yaml:"port"`
			} `yaml:"dns_sd_configs"`
			Authorization struct {
				CredentialsFile string `yaml:"credentials_file"`
			} `yaml:"authorization"`
		} `yaml:"scrape_configs"`
	}
	b, err := os.ReadFile(filepath.Join(composeDir, "prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &prom); err != nil {
		t.Fatal(err)
	}
	if len(prom.RuleFiles) == 0 || len(prom.ScrapeConfigs) == 0 || len(prom.ScrapeConfigs[0].DNSSD) == 0 {
		t.Fatalf("prometheus.yml: no rules or no scrape targets")
	}
	names := prom.ScrapeConfigs[0].DNSSD[0].Names
	for _, s := range []string{"ingress", "detector", "injector", "agentworker", "escalation"} {
		if !slices.Contains(names, s) {
			t.Errorf("prometheus.yml does not scrape %s", s)
		}
	}
	// rein's /metrics on 0.0.0.0 answers 401 without a metrics token:
	// Prometheus reads one from the secret compose-secrets writes.
	services, secrets := loadCompose(t)
	cred := prom.ScrapeConfigs[0].Authorization.CredentialsFile
	mounted := slices.ContainsFunc(services["prometheus"].Secrets, func(s composeSecret) bool {
		target := s.Target
		if target == "" {
			target = "/run/secrets/" + s.Source
		}
		return target == cred && secrets[s.Source] == "./"+metricsTokenFile
	})
	if cred == "" || !mounted {
		t.Errorf("prometheus.yml scrapes rein without the metrics token (authorization.credentials_file %q is not the prometheus service's secret of %s)", cred, metricsTokenFile)
	}
	runPromtool(t, "check", "config", "--syntax-only", filepath.Join(composeDir, "prometheus.yml"))
}

// metricsTokenFile is the token Prometheus scrapes rein with, in the
// compose directory.
const metricsTokenFile = "secrets/metrics-token"

// make compose-secrets (run in a scratch copy of the tree, with the rein
// the tests built) writes an HTTP tokens file rein accepts, in which the
// ingress token speaks for tenant acme and the token Prometheus reads
// from secrets/metrics-token, readable by Prometheus's user, may read
// /metrics; running it again changes nothing.
func TestComposeSecretsTokens(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not on PATH")
	}
	root := t.TempDir()
	dir := filepath.Join(root, "deploy", "compose")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		// -o build: use the rein the tests built (BIN) as it is.
		cmd := exec.CommandContext(t.Context(), mk, "-s", "-f", "Makefile", "-o", "build", "compose-secrets", "ROOT="+root, "BIN="+rein(t))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make compose-secrets: %v\n%s", err, out)
		}
	}
	run()
	first, err := os.ReadFile(filepath.Join(dir, "secrets", "http-tokens.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// secrets/llm.env is made for the key, holding none, private; the key
	// the operator writes into it survives the next run.
	llmEnv := filepath.Join(dir, llmEnvFile)
	if b, err := os.ReadFile(llmEnv); err != nil || regexp.MustCompile(`(?m)^\s*[A-Z]`).Match(b) {
		t.Errorf("make compose-secrets: %s: %v, want a file of comments only:\n%s", llmEnvFile, err, b)
	}
	if fi, err := os.Stat(llmEnv); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is not private to its owner: %v", llmEnvFile, err)
	}
	if err := os.WriteFile(llmEnv, []byte("REIN_LLM_API_KEY=the-operators-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run()
	if b, _ := os.ReadFile(llmEnv); string(b) != "REIN_LLM_API_KEY=the-operators-key\n" {
		t.Errorf("a second make compose-secrets replaced the key in %s: %q", llmEnvFile, b)
	}
	b, err := os.ReadFile(filepath.Join(dir, "secrets", "http-tokens.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, first) {
		t.Errorf("a second make compose-secrets changed http-tokens.yaml:\n%s\nthen\n%s", first, b)
	}
	var file struct {
		Tokens []telemetry.Token `yaml:"tokens"`
	}
	if err := yaml.UnmarshalWithOptions(b, &file, yaml.Strict()); err != nil {
		t.Fatalf("http-tokens.yaml: %v\n%s", err, b)
	}
	tokens, err := telemetry.NewTokens(file.Tokens)
	if err != nil {
		t.Fatalf("http-tokens.yaml: %v\n%s", err, b)
	}
	metricsToken, err := os.ReadFile(filepath.Join(dir, metricsTokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, metricsTokenFile)); err != nil || fi.Mode().Perm()&0o004 == 0 {
		t.Errorf("%s is not readable by Prometheus's user (nobody): %v", metricsTokenFile, fi.Mode())
	}
	var ingressToken string
	for _, tk := range file.Tokens {
		if tk.Token != "" {
			ingressToken = tk.Token
		}
	}
	authorize := func(token, role, tenant string) int {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		code, _ := tokens.Authorize(r, role, tenant)
		return code
	}
	if code := authorize(string(metricsToken), telemetry.RoleMetrics, ""); code != 0 {
		t.Errorf("the metrics token does not read /metrics: %d", code)
	}
	if code := authorize(ingressToken, telemetry.RoleIngress, "acme"); code != 0 {
		t.Errorf("the ingress token does not post turns for acme: %d", code)
	}
	if code := authorize(string(metricsToken), telemetry.RoleIngress, "acme"); code == 0 {
		t.Errorf("the metrics token may post turns")
	}
}

// checkNATSConfLoads loads nats.conf, with the auth.conf `rein keys
// server-config` generates beside it, as nats-server does: rein's
// identities are its only users, none with a password.
func checkNATSConfLoads(t *testing.T, conf []byte) {
	t.Helper()
	keys, err := natsserver.EnsureKeyring(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "auth.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.WriteAuthorization(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nats.conf"), conf, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NATS_SERVER_NAME", "nats1")
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats.conf"))
	if err != nil {
		t.Fatalf("nats.conf with a generated auth.conf does not load: %v", err)
	}
	if len(opts.Users) != 0 || opts.Password != "" || opts.Username != "" {
		t.Errorf("nats.conf has users or a password besides rein's nkeys")
	}
	var got []string
	for _, u := range opts.Nkeys {
		got = append(got, u.Nkey)
	}
	for _, id := range natsserver.Identities {
		if !slices.Contains(got, keys.PublicKey(id)) {
			t.Errorf("nats.conf with auth.conf does not know identity %s", id)
		}
	}
}

var fromLine = regexp.MustCompile(`(?m)^FROM\s+(\S+)(?:\s+AS\s+(\S+))?`)

// The Dockerfile is multi-stage, builds a static stripped binary stamped
// with its version, and runs it non-root on a minimal base with a health
// check rein answers; the Go version is go.mod's.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	froms := fromLine.FindAllStringSubmatch(df, -1)
	if len(froms) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a runtime stage", len(froms))
	}
	final := froms[len(froms)-1][1]
	if !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("runtime base %s: want distroless static or scratch", final)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod))
	if goVer == nil || !strings.HasPrefix(froms[0][1], "golang:"+goVer[1]) {
		t.Errorf("build stage %s does not use go.mod's Go %v", froms[0][1], goVer)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-s -w", "-X main.version=", "-X main.revision=", "-X main.buildTime="} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile build lacks %s", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\d+)`).FindStringSubmatch(df)
	if user == nil || user[1] == "0" {
		t.Errorf("Dockerfile must switch to a numeric non-root USER")
	}
	hc := regexp.MustCompile(`(?m)CMD \["/rein", "health"(.*)\]`).FindStringSubmatch(df)
	if !strings.Contains(df, "HEALTHCHECK") || hc == nil {
		t.Fatalf("Dockerfile needs a HEALTHCHECK running /rein health")
	}
	checkArgs(t, "Dockerfile HEALTHCHECK", append([]string{"health"}, jsonArgs(hc[1])...))
	cmd := regexp.MustCompile(`(?m)^CMD \[(.*)\]`).FindStringSubmatch(df)
	if cmd == nil {
		t.Fatal("Dockerfile has no CMD")
	}
	checkArgs(t, "Dockerfile CMD", jsonArgs(cmd[1]))
	if _, err := os.Stat("Dockerfile.dockerignore"); err != nil {
		t.Errorf("no Dockerfile.dockerignore: the whole repository, .git included, would be sent to the builder")
	}
}

// The image's default command (its CMD, with the data directory its ENV
// names) starts rein reachable from outside the container: serve's
// refusals of exposed ports pass, /healthz answers, the HTTP port still
// wants the token serve generates in the data directory, and the
// embedded NATS server listens on every interface. The ports are
// replaced by free ones: the machine is shared.
func TestDockerfileDefaultCommandServes(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := regexp.MustCompile(`(?m)^CMD \[(.*)\]`).FindSubmatch(b)
	env := regexp.MustCompile(`(?m)^ENV REIN_DATA_DIR=(\S+)`).FindSubmatch(b)
	expose := regexp.MustCompile(`(?m)^EXPOSE (.*)`).FindSubmatch(b)
	if cmdLine == nil || env == nil || expose == nil {
		t.Fatal("Dockerfile: no CMD, ENV REIN_DATA_DIR or EXPOSE")
	}
	args := jsonArgs(string(cmdLine[1]))
	ports := map[string]string{}
	for _, p := range strings.Fields(string(expose[1])) {
		ports[p] = freePort(t)
	}
	for _, a := range args {
		if host, port, err := net.SplitHostPort(a); err == nil && host == "0.0.0.0" && ports[port] == "" {
			t.Errorf("CMD listens on %s, which the Dockerfile does not EXPOSE", a)
		}
	}
	for i, a := range args {
		if host, port, err := net.SplitHostPort(a); err == nil && ports[port] != "" {
			args[i] = net.JoinHostPort(host, ports[port])
		}
	}
	data := t.TempDir()
	cmd := exec.Command(rein(t), args...)
	cmd.Dir = data
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REIN_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "REIN_DATA_DIR="+data)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the process has exited, with waitErr set.
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	httpPort := ports["8080"]
	base := "http://127.0.0.1:" + httpPort
	testutil.CheckFor(t, 90*time.Second, "/readyz of rein "+strings.Join(args, " ")+" answers 200", func() bool {
		select {
		case <-exited:
			t.Fatalf("rein %s exited: %v\n%s", strings.Join(args, " "), waitErr, out.String())
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	token, err := os.ReadFile(filepath.Join(data, "http-token"))
	if err != nil {
		t.Fatalf("the default command wrote no HTTP token to the data directory: %v", err)
	}
	get := func(path, tok string) int {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d, want 401", code)
	}
	if code := get("/metrics", strings.TrimSpace(string(token))); code != http.StatusOK {
		t.Errorf("/metrics with the generated token: %d, want 200", code)
	}
	// Both ports answer on an address other than loopback, when the
	// machine has one.
	if ip := nonLoopbackIP(); ip != "" {
		for _, p := range ports {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, p), 5*time.Second)
			if err != nil {
				t.Errorf("port %s is not reachable on %s: %v", p, ip, err)
				continue
			}
			c.Close()
		}
	}
}

// freePort returns a TCP port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// nonLoopbackIP returns an IPv4 address of this machine other than
// loopback, or "".
func nonLoopbackIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

// syncBuffer is a bytes.Buffer a process writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// jsonArgs splits the inside of an exec-form ["a", "b"] list.
func jsonArgs(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.Trim(strings.TrimSpace(p), `"`); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// The Makefile has the targets the README documents.
func TestMakefileTargets(t *testing.T) {
	b, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"build", "test", "lint", "image", "demo", "compose-up", "k8s-render"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(target) + `:`).Match(b) {
			t.Errorf("Makefile lacks target %s", target)
		}
	}
	// compose.yaml mounts the seeds and auth.conf that compose-secrets
	// generates with the rein it builds.
	recipe := regexp.MustCompile(`(?ms)^compose-secrets: build\b.*?\n\n`).Find(b)
	if !bytes.Contains(recipe, []byte("keys server-config --data-dir secrets > secrets/auth.conf")) {
		t.Errorf("Makefile: compose-secrets does not build rein and generate secrets/auth.conf and secrets/nats-keys with rein keys server-config:\n%s", recipe)
	}
}

// modelServices are the compose services that call a model: the agent
// worker, and the detector when INCEPTION_MODULE is llm or cascade.
var modelServices = []string{"agentworker", "detector"}

// llmEnvFile is the env_file the model's API key comes from.
const llmEnvFile = "./secrets/llm.env"

// The agent worker and the detector get the model's provider, name and
// base URL from compose.yaml and the API key from secrets/llm.env alone,
// and those settings are ones rein starts with; no other service gets
// any of them. With the local-model profile the default base URL is the
// local-model service, whose pull service fetches the same model before
// they start; without the profile the file loads and nothing waits for it.
func TestComposeModel(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(composeDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const key = "test-key-from-llm-env"
	withKey, without := t.TempDir(), t.TempDir()
	for _, dir := range []string{withKey, without} {
		if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), src, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(withKey, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withKey, llmEnvFile), []byte("# the operator's key\nREIN_LLM_API_KEY="+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Without secrets/llm.env (a local model needs no key) the services
	// start with no key at all: none is written in compose.yaml.
	services, _ := loadComposeIn(t, without, nil)
	for _, name := range modelServices {
		if v, ok := services[name].Environment[llm.EnvAPIKey]; ok {
			t.Errorf("compose service %s has %s=%q from compose.yaml itself; the key belongs in %s", name, llm.EnvAPIKey, v, llmEnvFile)
		}
	}
	for _, profiles := range [][]string{nil, {localModelProfile}} {
		services, _ := loadComposeIn(t, withKey, profiles)
		for name, s := range services {
			where := fmt.Sprintf("compose service %s (profiles %v)", name, profiles)
			calls := slices.Contains(modelServices, name)
			var llmVars []string
			for k := range s.Environment {
				if strings.HasPrefix(k, "REIN_LLM_") {
					llmVars = append(llmVars, k)
				}
			}
			checkLLMEnvNames(t, where, llmVars)
			if !calls {
				if len(llmVars) > 0 && strings.Contains(s.Image, "rein") {
					t.Errorf("%s calls no model but gets %v", where, llmVars)
				}
				if s.Environment[llm.EnvAPIKey] != "" {
					t.Errorf("%s gets the model's API key", where)
				}
				continue
			}
			if !slices.Equal(s.EnvFiles, []composeEnvFile{{Path: llmEnvFile, Required: false}}) {
				t.Errorf("%s: env_file %v; want the key's file %s alone, optional (a local model needs no key)", where, s.EnvFiles, llmEnvFile)
			}
			if s.Environment[llm.EnvAPIKey] != key {
				t.Errorf("%s: %s is %q; want the key from %s", where, llm.EnvAPIKey, s.Environment[llm.EnvAPIKey], llmEnvFile)
			}
			for _, n := range []string{llm.EnvProvider, llm.EnvModel} {
				if s.Environment[n] == "" {
					t.Errorf("%s: no %s", where, n)
				}
			}
			checkModelConfig(t, where, s.Environment)
			if s.DependsOn["provision"] != "service_completed_successfully" {
				t.Errorf("%s: does not wait for provision (depends_on %v)", where, s.DependsOn)
			}
			if profiles == nil {
				continue
			}
			// The local model: the base URL names the service and its
			// port, and the model it serves is pulled first.
			u, err := url.Parse(s.Environment[llm.EnvBaseURL])
			if err != nil || u.Hostname() != localModelProfile {
				t.Errorf("%s: %s %q is not the %s service", where, llm.EnvBaseURL, s.Environment[llm.EnvBaseURL], localModelProfile)
				continue
			}
			if s.DependsOn["local-model-pull"] != "service_completed_successfully" {
				t.Errorf("%s: does not wait for the model to be pulled (depends_on %v)", where, s.DependsOn)
			}
			pull := services["local-model-pull"]
			if want := []string{"pull", s.Environment[llm.EnvModel]}; !slices.Equal(pull.Command, want) {
				t.Errorf("local-model-pull runs %v; want %v, the model %s calls", pull.Command, want, name)
			}
			if host := pull.Environment["OLLAMA_HOST"]; !strings.Contains(host, "//"+u.Host) {
				t.Errorf("local-model-pull pulls into %q, not the server at %s", host, u.Host)
			}
			if !strings.HasPrefix(services[localModelProfile].Image, "ollama/ollama:") || strings.HasSuffix(services[localModelProfile].Image, ":latest") {
				t.Errorf("%s service: image %q; want a pinned Ollama (its OpenAI API on :11434/v1)", localModelProfile, services[localModelProfile].Image)
			}
			if u.Port() != "11434" || u.Path != "/v1" {
				t.Errorf("%s: %s %q: Ollama's OpenAI-compatible API is on port 11434 under /v1", where, llm.EnvBaseURL, u)
			}
		}
		_, local := services[localModelProfile]
		if local != (profiles != nil) {
			t.Errorf("profiles %v: the %s service present: %v", profiles, localModelProfile, local)
		}
	}
}

// localModelProfile is the compose profile, and the service, of the
// local model server.
const localModelProfile = "local-model"

// workflowFile is the CI workflow that builds the image and runs compose.
const workflowFile = "../.github/workflows/image.yml"

// The image workflow (run where Docker is, never here) uses Makefile
// targets that exist, the compose file's local-model profile, and rein
// commands and flags the binary has.
func TestImageWorkflow(t *testing.T) {
	b, err := os.ReadFile(workflowFile)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Run  string `yaml:"run"`
				Uses string `yaml:"uses"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatalf("%s: %v", workflowFile, err)
	}
	mk, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var runs strings.Builder
	for _, j := range wf.Jobs {
		for _, s := range j.Steps {
			runs.WriteString(s.Run + "\n")
		}
	}
	script := runs.String()
	targets := regexp.MustCompile(`make -f deploy/Makefile ([a-z-]+)`).FindAllStringSubmatch(script, -1)
	seen := map[string]bool{}
	for _, m := range targets {
		seen[m[1]] = true
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(m[1]) + `:`).Match(mk) {
			t.Errorf("%s runs make target %s, which deploy/Makefile lacks", workflowFile, m[1])
		}
	}
	for _, want := range []string{"image", "compose-up", "compose-down"} {
		if !seen[want] {
			t.Errorf("%s does not run make %s", workflowFile, want)
		}
	}
	if !strings.Contains(script, "--profile "+localModelProfile) || !strings.Contains(script, "/v1/turns") {
		t.Errorf("%s does not post a turn to compose with the %s profile", workflowFile, localModelProfile)
	}
	// The one-off container's rein command: `… run … ingress audit …`.
	m := regexp.MustCompile(`(?s)ingress (audit .*?--json)`).FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("%s does not read the conversation back with rein audit", workflowFile)
	}
	checkArgs(t, workflowFile, strings.Fields(strings.ReplaceAll(m[1], "\\", "")))
	services, _ := loadComposeIn(t, composeDir, []string{localModelProfile})
	for _, s := range services["ingress"].Secrets {
		if s.Target == "/run/rein-keys/reader.nk" {
			return
		}
	}
	t.Errorf("%s reads the timeline with /run/rein-keys/reader.nk, which the ingress service does not mount", workflowFile)
}

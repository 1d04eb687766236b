package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/app/dashboard"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

// natsFlags are the flags of every command that talks to NATS. Secrets come
// from files (--nats-creds, --nats-nkey) or the environment
// (REIN_NATS_PASSWORD, REIN_NATS_TOKEN), never from the command line,
// where any local user can read them.
type natsFlags struct {
	url, creds, nkey, user, password, token, tlsCA, tlsCert, tlsKey string
	// dataDir is where client commands find the admin key of a local rein.
	dataDir string
	fs      *pflag.FlagSet
}

// bind adds the connection flags and --data-dir (client commands).
func (f *natsFlags) bind(cmd *cobra.Command, defaultURL string) {
	f.bindConn(cmd, defaultURL)
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "./data", "data directory of the local rein whose admin NATS key (nats-keys/admin.nk) is used when no credentials are given")
}

func (f *natsFlags) bindConn(cmd *cobra.Command, defaultURL string) {
	fs := cmd.Flags()
	f.fs = fs
	fs.StringVar(&f.url, "nats-url", defaultURL, "NATS server or cluster URL(s), comma-separated")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&f.nkey, "nats-nkey", "", "NATS nkey seed file (rein's generated identities are under DATA-DIR/nats-keys)")
	fs.StringVar(&f.user, "nats-user", "", "NATS user (with REIN_NATS_PASSWORD)")
	fs.StringVar(&f.password, "nats-password", "", "refused on the command line: set REIN_NATS_PASSWORD")
	fs.StringVar(&f.token, "nats-token", "", "refused on the command line: set REIN_NATS_TOKEN")
	_ = fs.MarkHidden("nats-password")
	_ = fs.MarkHidden("nats-token")
	fs.StringVar(&f.tlsCA, "nats-tls-ca", "", "CA certificate to verify the NATS server")
	fs.StringVar(&f.tlsCert, "nats-tls-cert", "", "client certificate for NATS TLS")
	fs.StringVar(&f.tlsKey, "nats-tls-key", "", "client key for NATS TLS")
}

// connectConfig is how to reach NATS. Without credentials, a client command
// uses the admin key of the local rein in --data-dir when there is one.
func (f *natsFlags) connectConfig(name string) (streams.ConnectConfig, error) {
	if f.fs != nil {
		for _, secret := range []string{"nats-password", "nats-token"} {
			if f.fs.Changed(secret) {
				return streams.ConnectConfig{}, fmt.Errorf("--%s is refused: a secret on the command line is visible to every local user; set %s or use --nats-creds/--nats-nkey", secret, envName(secret))
			}
		}
	}
	cc := streams.ConnectConfig{URL: f.url, Creds: f.creds, NkeyFile: f.nkey, User: f.user, Password: f.password, Token: f.token,
		TLSCA: f.tlsCA, TLSCert: f.tlsCert, TLSKey: f.tlsKey, Name: name}
	if cc.Creds == "" && cc.NkeyFile == "" && cc.User == "" && cc.Token == "" && f.dataDir != "" {
		if seed := streams.SeedFile(f.dataDir, streams.IdentityAdmin); fileExists(seed) {
			cc.NkeyFile = seed
		}
	}
	return cc, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// connectJS connects to a running rein's NATS for client commands.
func connectJS(f *natsFlags, name string) (*nats.Conn, jetstream.JetStream, error) {
	cc, err := f.connectConfig(name)
	if err != nil {
		return nil, nil, err
	}
	nc, err := streams.Connect(cc)
	if err != nil {
		return nil, nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// serverFlags are the flags of commands that run rein's server side.
type serverFlags struct {
	nats       natsFlags
	embedded   bool
	dataDir    string
	listen     string
	httpAddr   string
	logLevel   string
	logFormat  string
	configPath string
	maxBytes   int
	memLimit   string
	// allowedHosts are Host names the HTTP port answers besides loopback
	// and its listen host.
	allowedHosts []string
	// ingressRate and ingressBurst bound each tenant's turns over HTTP.
	ingressRate  float64
	ingressBurst int
	// httpTokens is the file of POST /v1/turns's tokens; insecure allows a
	// non-loopback HTTP address without it.
	httpTokens string
	insecure   bool
	// httpTLSCert and httpTLSKey make the HTTP port HTTPS only.
	httpTLSCert, httpTLSKey string
	// natsTLSCert and natsTLSKey make the embedded server's client port
	// require TLS.
	natsTLSCert, natsTLSKey string
	// taskKey is the file of the task signing key (taskkey.go).
	taskKey string
	// dashboardReveal shows the dashboard's free text to every viewer.
	dashboardReveal bool
	// announce, when set, is logged as the effective configuration as
	// soon as the logger exists (before NATS starts).
	announce []setting
	// streamReplicas, kvReplicas and placementTags override the streams
	// section of rein.yaml (0 / empty: keep it).
	streamReplicas int
	kvReplicas     int
	placementTags  []string
}

func (f *serverFlags) bind(cmd *cobra.Command, defaultDataDir string) {
	f.nats.bindConn(cmd, "")
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir, "JetStream file storage of the embedded server, its NATS identities (nats-keys/) and the local HTTP token (http-token); made 0700")
	fs.StringVar(&f.listen, "nats-listen", streams.DefaultListen, "client address of the embedded server (it always requires one of rein's nkeys); a non-loopback address needs --nats-server-tls-cert/--nats-server-tls-key, or --insecure")
	fs.StringVar(&f.natsTLSCert, "nats-server-tls-cert", "", "TLS certificate of the embedded server's client port (in-process connections skip TLS)")
	fs.StringVar(&f.natsTLSKey, "nats-server-tls-key", "", "TLS key of the embedded server's client port")
	fs.StringVar(&f.httpTLSCert, "http-tls-cert", "", "TLS certificate of the HTTP port (then HTTPS only)")
	fs.StringVar(&f.httpTLSKey, "http-tls-key", "", "TLS key of the HTTP port")
	fs.BoolVar(&f.dashboardReveal, "dashboard-reveal", false, "show the dashboard's free text (what users and the agent said, tool results, summaries) to every viewer; by default it is redacted except for requests with a token of the operator role")
	fs.StringVar(&f.taskKey, "task-key", "", "file of the key the injector signs tasks with and the agent worker checks (a task without a valid signature is dead-lettered unverified_task); default DATA-DIR/task-key, generated on first start; required when those stages run in different processes on an external NATS")
	fs.StringVar(&f.httpAddr, "http", telemetry.DefaultHTTP, "HTTP address for /metrics, /healthz, /readyz, POST /v1/turns and the dashboard")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format on stderr: json (one object a line, for log collectors) or text (key=value, for a terminal)")
	fs.StringVar(&f.configPath, "config", "", "rein.yaml with flag values and the streams and sinks sections")
	fs.StringSliceVar(&f.allowedHosts, "http-allowed-hosts", nil, "Host names the HTTP port answers besides localhost, 127.0.0.1, ::1 and its listen host (others get 421: DNS rebinding); a wildcard listen address without any answers every Host")
	fs.Float64Var(&f.ingressRate, "ingress-rate", streams.DefaultTenantRate, "turns per second each tenant may post to POST /v1/turns (a token bucket; past it 429 with Retry-After; 0: no limit)")
	fs.IntVar(&f.ingressBurst, "ingress-burst", streams.DefaultTenantBurst, "burst of each tenant's token bucket")
	fs.StringVar(&f.httpTokens, "http-tokens", "", "YAML file of the HTTP port's bearer tokens ({tokens: [{token: …, tenants: [acme], roles: [ingress]}]}, or sha256: instead of token; roles ingress (POST /v1/turns for its tenants), dashboard (tenants [\"*\"]), metrics; default [ingress]); default: a local token with every role in DATA-DIR/http-token. On a non-loopback --http the dashboard and /metrics need their role (browsers sign in at /login)")
	fs.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback --http address without --http-tokens and a non-loopback --nats-listen without TLS (nkeys still required; messages cross the network in clear)")
	fs.IntVar(&f.maxBytes, "max-event-bytes", streams.DefaultMaxEventBytes, "largest accepted event body")
	fs.IntVar(&f.streamReplicas, "stream-replicas", 0, "replicas of every rein stream (1 on the embedded server, 3 on a JetStream cluster); 0: rein.yaml's streams section, else 1. Existing streams are never lowered")
	fs.IntVar(&f.kvReplicas, "kv-replicas", 0, "replicas of the conversations KV bucket; 0: as the streams")
	fs.StringSliceVar(&f.placementTags, "placement-tags", nil, "server tags the streams' and the bucket's replicas must be placed on (nats-server server_tags)")
	fs.StringVar(&f.memLimit, "memory-limit", "", "soft limit of the process's memory, embedded server included (e.g. 600MiB): the Go collector works harder near it instead of letting the heap double; empty: GOMEMLIMIT or none")
}

// proc is what the server-side commands share: NATS (embedded or
// external), the registry, the logger, the HTTP port and a publisher.
type proc struct {
	flags  *serverFlags
	file   *fileConfig
	log    *slog.Logger
	reg    *prometheus.Registry
	srv    *server.Server // nil with an external NATS
	nc     *nats.Conn
	js     jetstream.JetStream
	pub    *streams.Publisher
	http   *telemetry.Server
	prov   streams.ProvisionConfig
	stages *stageOptions
	closer []func()
	cc     streams.ConnectConfig // how stages open their own connections
	conns  []*nats.Conn          // the stages' connections
	// keys are the embedded server's identities (nil with an external
	// NATS, where every connection uses the given credentials).
	keys *streams.Keyring
	// taskKeyLoaded is the task signing key, once loaded (taskKey).
	taskKeyLoaded *schemas.TaskKey
	// running names the stages this process runs (runStages); injector is
	// the one injector stage, built once (see injectorStage).
	running  []string
	injector *injector.Stage
}

// link is one stage's own NATS connection: each stage consumes, acks and
// publishes on its own connection, so that one stage's traffic never
// queues behind another's in a shared socket and server read loop.
type link struct {
	js  jetstream.JetStream
	pub *streams.Publisher
}

// stageLink opens the connection of one stage. On the embedded server it
// connects under the stage's own identity, whose permissions cover only
// what the stage consumes and produces (streams/permissions.go);
// permission violations are logged with the stage's name.
func (rt *proc) stageLink(stage string) (link, error) {
	cc := rt.cc
	cc.Name += "-" + stage
	if rt.keys != nil {
		id := stage
		if stage == streams.StageDetector && rt.fused() {
			id = streams.IdentityDetectorFused
		}
		cc.NkeyFile = rt.keys.SeedFile(id)
	}
	errs := make(chan error, 8)
	cc.AsyncErrors = errs
	done := make(chan struct{})
	rt.closer = append(rt.closer, func() { close(done) })
	go func() {
		for {
			select {
			case err := <-errs:
				rt.log.Error("NATS asynchronous error", "stage", stage, "err", err)
			case <-done:
				return
			}
		}
	}()
	nc, err := streams.Connect(cc)
	if err != nil {
		return link{}, fmt.Errorf("%s: %w", stage, err)
	}
	rt.conns = append(rt.conns, nc)
	js, err := jetstream.New(nc)
	if err != nil {
		return link{}, fmt.Errorf("%s: jetstream: %w", stage, err)
	}
	return link{js: js, pub: streams.NewPublisher(js, rt.reg)}, nil
}

// startRuntime brings up NATS, provisions the streams and opens the HTTP
// port; /readyz turns ready at the end.
func startRuntime(ctx context.Context, f *serverFlags, file *fileConfig, name string) (*proc, error) {
	log, err := telemetry.NewLoggerFormat(os.Stderr, f.logLevel, f.logFormat)
	if err != nil {
		return nil, err
	}
	if err := applyMemoryLimit(f.memLimit); err != nil {
		return nil, err
	}
	if len(f.announce) > 0 {
		log.Info("effective configuration", logAttrs(f.announce)...)
	}
	rt := &proc{flags: f, file: file, log: log, reg: telemetry.NewRegistry()}
	if rt.prov, err = provisionConfig(file); err != nil {
		return nil, err
	}
	if err := replicationConfig(f, &rt.prov); err != nil {
		return nil, err
	}
	if err := checkHTTPExposure(f); err != nil {
		return nil, err
	}
	// Traces go out over OTLP when the standard OTEL_* variables ask for it.
	stopTracing, err := telemetry.SetupTracing(ctx, "rein")
	if err != nil {
		return nil, err
	}
	if telemetry.TracingEnabled() {
		log.Info("tracing on: spans exported over OTLP/HTTP", "endpoint", cmp.Or(os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"), os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")))
	}
	rt.closer = append(rt.closer, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(sctx)
	})
	rt.http = telemetry.NewServer(rt.reg, log)
	rt.http.Limits.AllowedHosts = f.allowedHosts
	rt.http.TLSCert, rt.http.TLSKey = f.httpTLSCert, f.httpTLSKey
	var tokens *telemetry.Tokens
	if f.httpAddr != "" {
		if tokens, err = ingressTokens(f, log); err != nil {
			return nil, err
		}
		// On a loopback port the dashboard and /metrics stay open to this
		// machine (the Host check keeps rebinding pages out); elsewhere
		// they need a token with their role.
		host, _, _ := net.SplitHostPort(f.httpAddr)
		rt.http.Access = telemetry.Access{Tokens: tokens, OpenReads: streams.IsLoopbackHost(host)}
		if err := rt.http.Listen(f.httpAddr); err != nil {
			return nil, err
		}
		rt.closer = append(rt.closer, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = rt.http.Shutdown(sctx)
		})
	}
	cc, err := f.nats.connectConfig(name)
	if err != nil {
		rt.close()
		return nil, err
	}
	if f.nats.url == "" {
		dir, err := filepath.Abs(f.dataDir)
		if err != nil {
			rt.close()
			return nil, err
		}
		keys, users, err := streams.ServerAuth(dir)
		if err != nil {
			rt.close()
			return nil, err
		}
		rt.srv, err = streams.StartEmbedded(streams.ServerConfig{DataDir: dir, Listen: f.listen,
			Users: users, SyncAlways: rt.prov.AnyDurable(),
			TLSCert: f.natsTLSCert, TLSKey: f.natsTLSKey, Insecure: f.insecure})
		if err != nil {
			rt.close()
			return nil, err
		}
		log.Info("embedded NATS server started", "listen", f.listen, "data_dir", dir, "keys", streams.KeysDir(dir))
		cc.InProcess = rt.srv
		cc.NkeyFile = keys.SeedFile(streams.IdentityAdmin)
		rt.keys = keys
	}
	rt.http.SetReady(false, "connecting to NATS")
	rt.cc = cc
	if rt.nc, err = streams.Connect(cc); err != nil {
		rt.close()
		return nil, err
	}
	if rt.js, err = jetstream.New(rt.nc); err != nil {
		rt.close()
		return nil, err
	}
	rt.http.SetReady(false, "provisioning streams")
	pctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	if err := streams.Provision(pctx, rt.js, rt.prov, streams.WithLogger(log)); err != nil {
		rt.close()
		return nil, err
	}
	rt.pub = streams.NewPublisher(rt.js, rt.reg)
	// POST /v1/turns writes REIN_TURNS.
	rt.requireStreams(streams.StreamTurns)
	rt.reg.MustRegister(telemetry.NewJetStreamCollector(rt.js, streams.StreamNames))
	// The HTTP ingress publishes under its own identity: turns only.
	il, err := rt.stageLink(streams.StageIngress)
	if err != nil {
		rt.close()
		return nil, err
	}
	ingress := streams.NewIngress(il.pub, f.maxBytes, rt.reg)
	ingress.SetTenantRate(f.ingressRate, f.ingressBurst)
	ingress.SetTokens(tokens)
	rt.http.Handle("POST /v1/turns", ingress)
	dash, err := dashboard.New(dashboard.Config{}, dashboard.Deps{JS: rt.js, Gatherer: rt.reg, Logger: log.With("component", "dashboard"),
		Reveal: dashboardReveal(f, tokens)})
	if err != nil {
		rt.close()
		return nil, err
	}
	dash.Register(rt.http)
	// The dashboard samples the counters for its time windows while no
	// page is open; it stops with the process.
	dctx, stopDash := context.WithCancel(context.WithoutCancel(ctx))
	dashDone := make(chan struct{})
	go func() { defer close(dashDone); _ = dash.Run(dctx) }()
	rt.closer = append(rt.closer, func() { stopDash(); <-dashDone })
	rt.http.SetReady(true, "")
	return rt, nil
}

// close releases everything in reverse order: HTTP, NATS connection,
// embedded server (which flushes JetStream to disk).
func (rt *proc) close() {
	for _, nc := range rt.conns {
		_ = nc.FlushTimeout(2 * time.Second)
		nc.Close()
	}
	if rt.nc != nil {
		_ = rt.nc.FlushTimeout(2 * time.Second)
		rt.nc.Close()
	}
	for i := len(rt.closer) - 1; i >= 0; i-- {
		rt.closer[i]()
	}
	if rt.srv != nil {
		rt.srv.Shutdown()
		rt.srv.WaitForShutdown()
	}
}

// watchModel makes /readyz report the model endpoint while its circuit
// breaker is open (status degraded: see telemetry.Server.AddCheck).
func (rt *proc) watchModel(endpoint string, c llm.Client) {
	if rt.http == nil {
		return
	}
	rt.http.AddCheck("model "+endpoint, func() error {
		if !llm.IsAvailable(c) {
			return llm.ErrUnavailable
		}
		return nil
	})
}

// dashboardReveal is who sees the dashboard's free text: everyone with
// --dashboard-reveal, else requests carrying a token of the operator role.
func dashboardReveal(f *serverFlags, tokens *telemetry.Tokens) func(*http.Request) bool {
	if f.dashboardReveal {
		return func(*http.Request) bool { return true }
	}
	return func(r *http.Request) bool {
		code, _ := tokens.Authorize(r, telemetry.RoleOperator, "")
		return code == 0
	}
}

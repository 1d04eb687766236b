package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/reinception/rein/injector"
	"github.com/reinception/rein/internal/app/dashboard"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams"
)

// natsFlags are the flags of every command that talks to NATS.
type natsFlags struct {
	url, creds, user, password, token, tlsCA, tlsCert, tlsKey string
}

func (f *natsFlags) bind(cmd *cobra.Command, defaultURL string) {
	fs := cmd.Flags()
	fs.StringVar(&f.url, "nats-url", defaultURL, "NATS server or cluster URL(s), comma-separated")
	fs.StringVar(&f.creds, "nats-creds", "", "NATS credentials file (JWT and nkey seed)")
	fs.StringVar(&f.user, "nats-user", "", "NATS user (with --nats-password); also secures the embedded server's listener")
	fs.StringVar(&f.password, "nats-password", "", "NATS password")
	fs.StringVar(&f.token, "nats-token", "", "NATS token; also secures the embedded server's listener")
	fs.StringVar(&f.tlsCA, "nats-tls-ca", "", "CA certificate to verify the NATS server")
	fs.StringVar(&f.tlsCert, "nats-tls-cert", "", "client certificate for NATS TLS")
	fs.StringVar(&f.tlsKey, "nats-tls-key", "", "client key for NATS TLS")
}

func (f *natsFlags) connectConfig(name string) streams.ConnectConfig {
	return streams.ConnectConfig{URL: f.url, Creds: f.creds, User: f.user, Password: f.password, Token: f.token,
		TLSCA: f.tlsCA, TLSCert: f.tlsCert, TLSKey: f.tlsKey, Name: name}
}

// connectJS connects to a running rein's NATS for client commands.
func connectJS(f *natsFlags, name string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := streams.Connect(f.connectConfig(name))
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
	// streamReplicas, kvReplicas and placementTags override the streams
	// section of rein.yaml (0 / empty: keep it).
	streamReplicas int
	kvReplicas     int
	placementTags  []string
}

func (f *serverFlags) bind(cmd *cobra.Command, defaultDataDir string) {
	f.nats.bind(cmd, "")
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir, "JetStream file storage of the embedded server")
	fs.StringVar(&f.listen, "nats-listen", streams.DefaultListen, "client address of the embedded server; a non-loopback address needs --nats-user/--nats-password or --nats-token")
	fs.StringVar(&f.httpAddr, "http", telemetry.DefaultHTTP, "HTTP address for /metrics, /healthz, /readyz, POST /v1/turns and the dashboard")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.configPath, "config", "", "rein.yaml with flag values and the streams and sinks sections")
	fs.StringSliceVar(&f.allowedHosts, "http-allowed-hosts", nil, "Host names the HTTP port answers besides localhost, 127.0.0.1, ::1 and its listen host (others get 421: DNS rebinding); a wildcard listen address without any answers every Host")
	fs.Float64Var(&f.ingressRate, "ingress-rate", streams.DefaultTenantRate, "turns per second each tenant may post to POST /v1/turns (a token bucket; past it 429 with Retry-After; 0: no limit)")
	fs.IntVar(&f.ingressBurst, "ingress-burst", streams.DefaultTenantBurst, "burst of each tenant's token bucket")
	fs.StringVar(&f.httpTokens, "http-tokens", "", "YAML file of POST /v1/turns's bearer tokens bound to tenants ({tokens: [{token: …, tenants: [acme]}]}, or sha256: instead of token); default: a local token for every tenant in DATA-DIR/http-token")
	fs.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback --http address without --http-tokens")
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

// stageLink opens the connection of one stage.
func (rt *proc) stageLink(stage string) (link, error) {
	cc := rt.cc
	cc.Name += "-" + stage
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
	log, err := telemetry.NewLogger(os.Stderr, f.logLevel)
	if err != nil {
		return nil, err
	}
	if err := applyMemoryLimit(f.memLimit); err != nil {
		return nil, err
	}
	rt := &proc{flags: f, file: file, log: log, reg: telemetry.NewRegistry(), prov: streams.DefaultProvision()}
	if sec := file.section("streams"); sec != nil {
		if err := yamlStrict(sec, &rt.prov); err != nil {
			return nil, fmt.Errorf("config section streams: %w", err)
		}
	}
	if err := replicationConfig(f, &rt.prov); err != nil {
		return nil, err
	}
	if err := checkHTTPExposure(f); err != nil {
		return nil, err
	}
	rt.http = telemetry.NewServer(rt.reg, log)
	rt.http.Limits.AllowedHosts = f.allowedHosts
	if f.httpAddr != "" {
		if err := rt.http.Listen(f.httpAddr); err != nil {
			return nil, err
		}
		rt.closer = append(rt.closer, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = rt.http.Shutdown(sctx)
		})
	}
	cc := f.nats.connectConfig(name)
	if f.nats.url == "" {
		dir, err := filepath.Abs(f.dataDir)
		if err != nil {
			return nil, err
		}
		rt.srv, err = streams.StartEmbedded(streams.ServerConfig{DataDir: dir, Listen: f.listen,
			User: f.nats.user, Password: f.nats.password, Token: f.nats.token, SyncAlways: rt.prov.AnyDurable()})
		if err != nil {
			rt.close()
			return nil, err
		}
		log.Info("embedded NATS server started", "listen", f.listen, "data_dir", dir)
		cc.InProcess = rt.srv
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
	ingress := streams.NewIngress(rt.pub, f.maxBytes, rt.reg)
	ingress.SetTenantRate(f.ingressRate, f.ingressBurst)
	if f.httpAddr != "" {
		tokens, err := ingressTokens(f, log)
		if err == nil {
			err = ingress.SetTokens(tokens)
		}
		if err != nil {
			rt.close()
			return nil, err
		}
	}
	rt.http.Handle("POST /v1/turns", ingress)
	dash, err := dashboard.New(dashboard.Config{}, dashboard.Deps{JS: rt.js, Gatherer: rt.reg, Logger: log.With("component", "dashboard")})
	if err != nil {
		rt.close()
		return nil, err
	}
	dash.Register(rt.http)
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

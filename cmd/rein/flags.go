package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/escalation"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/app/pipeline"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
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
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "./data", "data directory of the local rein whose admin NATS key (nats-keys/admin.nk) is used when no credentials are given, and whose NATS address (written by serve) is used when no --nats-url is given")
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
func (f *natsFlags) connectConfig(name string) (natsserver.ConnectConfig, error) {
	if f.fs != nil {
		for _, secret := range []string{"nats-password", "nats-token"} {
			if f.fs.Changed(secret) {
				return natsserver.ConnectConfig{}, fmt.Errorf("--%s is refused: a secret on the command line is visible to every local user; set %s or use --nats-creds/--nats-nkey", secret, envName(secret))
			}
		}
	}
	url := f.url
	if fl := f.lookup("nats-url"); fl != nil && !fl.Changed && f.url == fl.DefValue && f.dataDir != "" {
		// A local rein serve recorded where its embedded server listens.
		if u, ok := natsserver.LocalURL(f.dataDir); ok {
			url = u
		}
	}
	cc := natsserver.ConnectConfig{URL: url, Creds: f.creds, NkeyFile: f.nkey, User: f.user, Password: f.password, Token: f.token,
		TLSCA: f.tlsCA, TLSCert: f.tlsCert, TLSKey: f.tlsKey, Name: name}
	if cc.Creds == "" && cc.NkeyFile == "" && cc.User == "" && cc.Token == "" && f.dataDir != "" {
		if seed := natsserver.SeedFile(f.dataDir, natsserver.IdentityAdmin); fileExists(seed) {
			cc.NkeyFile = seed
		}
	}
	return cc, nil
}

// lookup is the flag of that name, nil when unbound.
func (f *natsFlags) lookup(name string) *pflag.Flag {
	if f.fs == nil {
		return nil
	}
	return f.fs.Lookup(name)
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
	nc, err := natsserver.Connect(cc)
	if err != nil {
		return nil, nil, err
	}
	js, err := natsserver.NewJetStream(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// serverFlags are the flags of commands that run rein's server side.
type serverFlags struct {
	nats       natsFlags
	dataDir    string
	listen     string
	httpAddr   string
	logLevel   string
	logFormat  string
	configPath string
	maxBytes   int
	memLimit   string
	heapGoal   string
	// allowedHosts are Host names the HTTP port answers besides loopback
	// and its listen host.
	allowedHosts []string
	// ingressRate and ingressBurst bound each tenant's turns over HTTP.
	ingressRate  float64
	ingressBurst int
	// ingressInFlight bounds each tenant's HTTP requests in flight.
	ingressInFlight int
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
	// precisionFloor is exported for the measured-precision alert.
	precisionFloor float64
	// queue draws the review queue for the dashboard's label form.
	queue queueFlags
	// announce, when set, is logged as the effective configuration as
	// soon as the logger exists (before NATS starts).
	announce []setting
	// streamReplicas, kvReplicas and placementTags override the streams
	// section of rein.yaml (0 / empty: keep it).
	streamReplicas int
	kvReplicas     int
	placementTags  []string
	// partitions overrides streams.partitions (0: keep it).
	partitions int
	// natsKeysDir holds the seeds of rein's identities, for an external
	// NATS whose authorization is `rein keys server-config`'s.
	natsKeysDir string
	// stageConn is pipeline.Config.StageConn.
	stageConn string
}

func (f *serverFlags) bind(cmd *cobra.Command, defaultDataDir string) {
	f.nats.bindConn(cmd, "")
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir, "JetStream file storage of the embedded server, its NATS identities (nats-keys/) and the local HTTP token (http-token); made 0700")
	fs.StringVar(&f.listen, "nats-listen", natsserver.DefaultListen, "client address of the embedded server (it always requires one of rein's nkeys); a non-loopback address needs --nats-server-tls-cert/--nats-server-tls-key, or --insecure")
	fs.StringVar(&f.stageConn, "nats-stage-conn", pipeline.StageConnInProcess, "how the stages reach the embedded server: in-process (inside this process, buffered each way), loopback (its client port, which must be plain and on a loopback --nats-listen) or pipe (inside this process, each write waiting for the other side: the earlier default, to compare or fall back on). docs/performance.md has each one's figures; not with --nats-url")
	fs.StringVar(&f.natsTLSCert, "nats-server-tls-cert", "", "TLS certificate of the embedded server's client port (in-process connections skip TLS)")
	fs.StringVar(&f.natsTLSKey, "nats-server-tls-key", "", "TLS key of the embedded server's client port")
	fs.StringVar(&f.httpTLSCert, "http-tls-cert", "", "TLS certificate of the HTTP port (then HTTPS only)")
	fs.StringVar(&f.httpTLSKey, "http-tls-key", "", "TLS key of the HTTP port")
	f.queue.bind(fs)
	fs.Float64Var(&f.precisionFloor, "label-precision-floor", labels.DefaultPrecisionFloor, "detection precision measured from operators' labels below which ReinMeasuredPrecisionBelowFloor fires (exported as rein_label_precision_floor; docs/labels.md)")
	fs.BoolVar(&f.dashboardReveal, "dashboard-reveal", false, "show the dashboard's free text (what users and the agent said, tool results, summaries) to every viewer; by default it is redacted except for requests with a token of the operator role")
	fs.StringVar(&f.taskKey, "task-key", "", "file of the key the injector signs tasks with and the agent worker checks (a task without a valid signature is dead-lettered unverified_task); default DATA-DIR/task-key, generated on first start; required when those stages run in different processes on an external NATS")
	fs.StringVar(&f.httpAddr, "http", telemetry.DefaultHTTP, "HTTP address for /metrics, /healthz, /readyz, POST /v1/turns and the dashboard")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&f.logFormat, "log-format", "json", "log format on stderr: json (one object a line, for log collectors) or text (key=value, for a terminal)")
	fs.StringSliceVar(&f.allowedHosts, "http-allowed-hosts", nil, "Host names the HTTP port answers besides localhost, 127.0.0.1, ::1 and its listen host (others get 421: DNS rebinding); a wildcard listen address without any answers every Host")
	fs.Float64Var(&f.ingressRate, "ingress-rate", ingress.DefaultTenantRate, "turns per second each tenant may post to POST /v1/turns (a token bucket; past it 429 with Retry-After; 0: no limit)")
	fs.IntVar(&f.ingressBurst, "ingress-burst", ingress.DefaultTenantBurst, "burst of each tenant's token bucket")
	fs.IntVar(&f.ingressInFlight, "ingress-in-flight", ingress.DefaultTenantInFlight, "each tenant's POST /v1/turns in flight at once (waiting on JetStream included); past it 429")
	fs.StringVar(&f.httpTokens, "http-tokens", "", "YAML file of the HTTP port's bearer tokens ({tokens: [{token: …, tenants: [acme], roles: [ingress]}]}, or sha256: instead of token; roles ingress (POST /v1/turns for its tenants), dashboard (tenants [\"*\"]), metrics; default [ingress]); default: a local token with every role in DATA-DIR/http-token. On a non-loopback --http the dashboard and /metrics need their role (browsers sign in at /login)")
	fs.BoolVar(&f.insecure, "insecure", false, "allow a non-loopback --http address without --http-tokens and a non-loopback --nats-listen without TLS (nkeys still required; messages cross the network in clear)")
	fs.IntVar(&f.maxBytes, "max-event-bytes", streams.DefaultMaxEventBytes, "largest accepted event body")
	f.bindStreams(fs)
	fs.StringVar(&f.heapGoal, "heap-goal", pipeline.DefaultHeapGoal, "the heap the Go collector lets grow before a cycle while the live heap is small (e.g. 256MiB): fewer collections, so less CPU and a lower tail latency, for a resident set of about this plus stacks; past it the collector runs as GOGC says (100 unless set), never more often. 0: GOGC alone")
	fs.StringVar(&f.memLimit, "memory-limit", "", "soft limit of the process's memory, embedded server included (e.g. 600MiB): the Go collector works harder near it instead of letting the heap double; empty: GOMEMLIMIT or none")
}

// bindStreams binds the flags that say where the streams are and how they
// are replicated: serve's, and rein provision's.
func (f *serverFlags) bindStreams(fs *pflag.FlagSet) {
	fs.StringVar(&f.configPath, "config", "", "rein.yaml with flag values and the streams and sinks sections")
	fs.IntVar(&f.streamReplicas, "stream-replicas", 0, "replicas of every rein stream (1 on the embedded server, 3 on a JetStream cluster); 0: rein.yaml's streams section, else 1. Existing streams are never lowered")
	fs.IntVar(&f.kvReplicas, "kv-replicas", 0, "replicas of the conversations KV bucket; 0: as the streams")
	fs.IntVar(&f.partitions, "partitions", 0, fmt.Sprintf("split the turns, detections and tasks streams into this many partitions by conversation (1..%d), so that as many replicas of the detector, injector and agent worker work at once, each on its share of the conversations; set when the streams are created, never changed on streams holding messages; 0: rein.yaml's streams.partitions, else 1 (one active replica per stage, the others standing by)", streams.MaxPartitions))
	fs.StringSliceVar(&f.placementTags, "placement-tags", nil, "server tags the streams' and the bucket's replicas must be placed on (nats-server server_tags)")
	fs.StringVar(&f.natsKeysDir, "nats-keys-dir", "", "with --nats-url: a directory of rein's identity seeds (<identity>.nk from rein keys; the external server configured with rein keys server-config): each stage connects as its own identity, the process itself as admin (and provisions) when admin.nk is there, else as reader (then run rein provision first). Replaces --nats-nkey/--nats-creds/--nats-user")
}

// moduleFlags choose and configure the inception module; serve, demo,
// detect and shadow share them.
type moduleFlags struct {
	module   string
	taxonomy string
	plan     string
	gate     string // --gate-model
	typed    string // --typed-model
	fewShot  int    // --few-shot-labels
	// tauBench (detect --taubench): the τ-bench data directory whose
	// retail products.json gives the rules the product catalogue.
	tauBench string
	provider string
	model    string
	baseURL  string
	// record and cassette (eval) record the inception model's calls to,
	// or answer them from, a cassette file.
	record, cassette string
	// heldOut (eval --held-out) names types held out of the taxonomy.
	heldOut []string
	// wrapClient (eval), when set, wraps the inception model's client
	// (token estimates for a model that reports no usage).
	wrapClient func(llm.Client) llm.Client
}

func (f *moduleFlags) bind(fs *pflag.FlagSet, defaultModule string) {
	fs.StringVar(&f.module, "module", defaultModule, "inception module: rules (offline), llm (one model call per user turn) or cascade (rules gate, then llm)")
	fs.StringVar(&f.taxonomy, "taxonomy", "", "taxonomy YAML file replacing the six embedded default error types")
	fs.StringVar(&f.plan, "plan", planted.PlanTemplate, "planted reasoning: template (the taxonomy's plan with the evidence quote) or generated (the model's own, validated)")
	fs.StringVar(&f.gate, "gate-model", "", "cascade gate: add a classifier to its rules, builtin (the one rein ships) or a weights file rein detect --train-gate wrote (default: the rules alone)")
	fs.StringVar(&f.typed, "typed-model", "", "rules module: add the typed classifier where its rules find nothing, builtin (the one rein ships) or a weights file rein detect --train-typed wrote (default: the rules alone)")
	fs.StringVar(&f.provider, "provider", "", "model provider for llm/cascade: openai, anthropic, replay or scripted (default $REIN_LLM_PROVIDER)")
	fs.StringVar(&f.model, "model", "", "model name (default $REIN_LLM_MODEL)")
	fs.StringVar(&f.baseURL, "base-url", "", "provider base URL, e.g. http://127.0.0.1:8000/v1 for an OpenAI-compatible server (default $REIN_LLM_BASE_URL)")
}

// options are the flags as the runtime's module options.
func (f *moduleFlags) options() pipeline.Modules {
	return pipeline.Modules{Module: f.module, Taxonomy: f.taxonomy, Plan: f.plan, GateModel: f.gate, TypedModel: f.typed, FewShot: f.fewShot, TauBench: f.tauBench, Provider: f.provider, Model: f.model, BaseURL: f.baseURL,
		Record: f.record, Cassette: f.cassette, HeldOut: f.heldOut, WrapClient: f.wrapClient}
}

// llmConfig is the model configuration: REIN_LLM_* from the environment,
// overridden by the flags given.
func (f *moduleFlags) llmConfig() llm.Config { return f.options().LLMConfig() }

// build returns the configured module and its taxonomy.
func (f *moduleFlags) build(reg prometheus.Registerer) (inception.Module, *inception.Taxonomy, error) {
	return f.options().Build(reg)
}

// modelPathsOf reads, at each look for a promoted model, where the gate
// and typed models are: a path rein.yaml sets is read from the file again
// (a promotion may point it elsewhere); one a flag or the environment
// sets stays. Nil when neither comes from the file.
func modelPathsOf(cmd *cobra.Command, file *fileConfig) func() (string, string, error) {
	gateFlag, typedFlag := cmd.Flags().Lookup("gate-model"), cmd.Flags().Lookup("typed-model")
	if gateFlag == nil || typedFlag == nil || file == nil || file.path == "" {
		return nil
	}
	gateFile := strings.HasPrefix(flagSource(gateFlag), "file ")
	typedFile := strings.HasPrefix(flagSource(typedFlag), "file ")
	if !gateFile && !typedFile {
		return nil
	}
	gate, typed, path := gateFlag.Value.String(), typedFlag.Value.String(), file.path
	// value is a key's path in the file read again ("" when it is gone).
	value := func(f *fileConfig, key string) string {
		if v, ok := f.raw[key]; ok && v != nil {
			return fmt.Sprint(v)
		}
		return ""
	}
	return func() (string, string, error) {
		f, err := loadFileConfig(path)
		if err != nil {
			return "", "", err
		}
		g, t := gate, typed
		if gateFile {
			g = value(f, "gate-model")
		}
		if typedFile {
			t = value(f, "typed-model")
		}
		return g, t, nil
	}
}

// proc is a started runtime with the rein.yaml it was configured from and
// the stage options its stages run with (runStages).
type proc struct {
	*pipeline.Process
	file   *fileConfig
	stages *stageOptions
}

// startRuntime turns the server flags and rein.yaml into the runtime's
// configuration and starts it: NATS, the streams, the HTTP port.
func startRuntime(ctx context.Context, f *serverFlags, file *fileConfig, name string) (*proc, error) {
	log, err := telemetry.NewLoggerFormat(os.Stderr, f.logLevel, f.logFormat)
	if err != nil {
		return nil, err
	}
	if len(f.announce) > 0 {
		log.Info("effective configuration", logAttrs(f.announce)...)
	}
	// Before anything is written (the local HTTP token, the data dir).
	if err := pipeline.CheckSizes(f.memLimit, f.heapGoal); err != nil {
		return nil, err
	}
	prov, err := provisionConfig(file)
	if err != nil {
		return nil, err
	}
	if err := replicationConfig(f, &prov); err != nil {
		return nil, err
	}
	if err := checkHTTPExposure(f); err != nil {
		return nil, err
	}
	var tokens *telemetry.Tokens
	if f.httpAddr != "" {
		if tokens, err = ingressTokens(f, log); err != nil {
			return nil, err
		}
	}
	cc, err := f.nats.connectConfig(name)
	if err != nil {
		return nil, err
	}
	if err := checkKeysDir(f); err != nil {
		return nil, err
	}
	p, err := pipeline.Start(ctx, pipeline.Config{KeysDir: f.natsKeysDir, Name: name, Logger: log, Connect: cc, DataDir: f.dataDir, Listen: f.listen, StageConn: f.stageConn,
		NATSTLSCert: f.natsTLSCert, NATSTLSKey: f.natsTLSKey, Insecure: f.insecure,
		HTTPAddr: f.httpAddr, HTTPTLSCert: f.httpTLSCert, HTTPTLSKey: f.httpTLSKey, AllowedHosts: f.allowedHosts,
		Tokens: tokens, DashboardReveal: f.dashboardReveal, LabelMonitor: labels.MonitorConfig{Floor: f.precisionFloor}, LabelQueue: f.queue.cfg, IngressRate: f.ingressRate, IngressBurst: f.ingressBurst, IngressInFlight: f.ingressInFlight,
		MaxEventBytes: f.maxBytes, MemoryLimit: f.memLimit, HeapGoal: f.heapGoal, Provision: prov, TaskKeyFile: f.taskKey})
	if err != nil {
		return nil, err
	}
	return &proc{Process: p, file: file}, nil
}

// checkKeysDir refuses --nats-keys-dir where it means nothing (the
// embedded server has its own keys) or next to other credentials.
func checkKeysDir(f *serverFlags) error {
	if f.natsKeysDir == "" {
		return nil
	}
	if f.nats.url == "" {
		return fmt.Errorf("%w: --nats-keys-dir is for an external NATS (--nats-url); the embedded server keeps its identities in DATA-DIR/nats-keys", streams.ErrInvalidConfig)
	}
	if f.nats.creds != "" || f.nats.nkey != "" || f.nats.user != "" || f.nats.token != "" {
		return fmt.Errorf("%w: --nats-keys-dir gives every connection its identity; drop --nats-creds, --nats-nkey, --nats-user and REIN_NATS_TOKEN", streams.ErrInvalidConfig)
	}
	return nil
}

// runStages builds and runs the named stages with rt.stages until ctx is
// cancelled; the first stage to fail stops the others. The escalation
// stage's sinks come from rein.yaml.
func runStages(ctx context.Context, rt *proc, names []string) error {
	opts := rt.stages.runtime()
	if slices.Contains(names, bus.StageEscalation) {
		sinks, err := sinksConfig(rt.file)
		if err != nil {
			return fmt.Errorf("stage escalation: %w", err)
		}
		opts.Escalation.Sinks = sinks
	}
	if rt.stages.experiments != "" && slices.Contains(names, bus.StageDetector) {
		cfg, err := experiment.LoadFile(rt.stages.experiments)
		if err != nil {
			return fmt.Errorf("--experiments: %w", err)
		}
		a, err := experiment.NewAssigner(cfg)
		if err != nil {
			return fmt.Errorf("--experiments: %w", err)
		}
		opts.Given.Experiments = a
		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.Watch(wctx, rt.stages.experiments, experimentReload, func(err error) { rt.Log.Warn("experiments file", "err", err) })
		}()
		defer func() { stop(); <-done }()
	}
	return rt.Run(ctx, opts, names)
}

// experimentReload is how often the experiments file is re-read: the kill
// switch takes effect within it.
const experimentReload = 5 * time.Second

// sinksConfig decodes rein.yaml's `sinks:` section: one flat entry per sink,
// each checked against the keys of its type.
func sinksConfig(file *fileConfig) (escalation.SinksConfig, error) {
	var sinks escalation.SinksConfig
	if err := file.decodeSection("sinks", &sinks.Sinks); err != nil {
		return escalation.SinksConfig{}, err
	}
	return sinks, nil
}

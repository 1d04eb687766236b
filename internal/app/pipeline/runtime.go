package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/app/audit"
	"github.com/reinception/rein/internal/app/dashboard"
	"github.com/reinception/rein/internal/experiment"
	"github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/internal/llm"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/ingress"
	"github.com/reinception/rein/streams/natsserver"
)

// ProvisionTimeout bounds provisioning at start: long enough for a fresh
// cluster to elect its leaders while several processes start together.
const ProvisionTimeout = 90 * time.Second

// Config is what a server-side process needs, every value resolved from
// flags, the environment and rein.yaml by the caller.
type Config struct {
	// Name is the NATS client name; each stage's connection appends its own.
	Name string
	// Logger is the process's logger (nil: slog.Default()).
	Logger *slog.Logger
	// Connect reaches an external NATS when Connect.URL is set; otherwise
	// an embedded server is started with DataDir and Listen, each
	// connection under one of its own nkey identities.
	Connect natsserver.ConnectConfig
	DataDir string
	Listen  string
	// NATSTLSCert and NATSTLSKey make the embedded server's client port
	// require TLS; Insecure allows a non-loopback Listen without it.
	NATSTLSCert, NATSTLSKey string
	Insecure                bool
	// StageConn is how the stages reach the embedded server:
	// StageConnInProcess ("" too), StageConnBarePipe or StageConnLoopback
	// (refused with an external NATS, which is reached at its URL).
	StageConn string
	// HTTPAddr serves /metrics, /healthz, /readyz, POST /v1/turns and the
	// dashboard ("": no listener), over TLS with HTTPTLSCert/HTTPTLSKey;
	// AllowedHosts are Host names it answers besides loopback and its
	// listen host.
	HTTPAddr                string
	HTTPTLSCert, HTTPTLSKey string
	AllowedHosts            []string
	// Tokens are the HTTP port's bearer tokens (nil: none required).
	Tokens *telemetry.Tokens
	// DashboardReveal shows the dashboard's free text to every viewer;
	// otherwise only to requests with a token of the operator role.
	DashboardReveal bool
	// LabelMonitor exports the precision measured from operators' labels;
	// LabelQueue is the review queue the dashboard's label form records
	// draws of (the same as rein label's).
	LabelMonitor labels.MonitorConfig
	LabelQueue   labels.QueueConfig
	// IngressRate and IngressBurst bound each tenant's POST /v1/turns;
	// MaxEventBytes is the largest accepted body.
	IngressRate  float64
	IngressBurst int
	// IngressInFlight bounds each tenant's POST /v1/turns in flight (0:
	// ingress.DefaultTenantInFlight).
	IngressInFlight int
	MaxEventBytes   int
	// MemoryLimit is the Go runtime's soft memory limit, e.g. 600MiB
	// ("": GOMEMLIMIT or none).
	MemoryLimit string
	// HeapGoal is the heap the Go collector lets grow before a cycle
	// while the live heap is small (internal/heapgoal), e.g. 256MiB; ""
	// or 0: GOGC alone. Process-wide while the Process runs; past the
	// goal, GOGC applies as usual.
	HeapGoal string
	// Provision is the streams' configuration, replication included.
	Provision natsserver.ProvisionConfig
	// TaskKeyFile is the task signing key's file; "" on the embedded
	// server: DataDir/task-key, generated on first start.
	TaskKeyFile string
	// KeysDir, with an external NATS, holds seed files of rein's
	// identities (<identity>.nk, as `rein keys` writes them), so that each
	// stage connects under its own identity as on the embedded server. The
	// process's own connection uses admin.nk when it is there, and then
	// provisions the streams; otherwise reader.nk, and the streams must
	// exist already (`rein provision`). Connect then carries no
	// credentials of its own.
	KeysDir string
}

// How the stages reach the embedded server (Config.StageConn).
const (
	// StageConnInProcess is an in-process connection: no socket, each way
	// buffered in memory (natsserver's bufferedConn), so a write never
	// waits for the other side's goroutine.
	StageConnInProcess = "in-process"
	// StageConnBarePipe is the server's in-process pipe unbuffered: each
	// write waits for the other side to read it (rein's default before
	// the buffer; kept to compare and to fall back on).
	StageConnBarePipe = "pipe"
	// StageConnLoopback is the server's own client port on a loopback
	// address: the kernel buffers each write, at the cost of a system call
	// per read and write. Before the in-process connection was buffered it
	// held more turns per second behind slow models, at more CPU per turn
	// and a higher p50 at a steady rate (docs/performance.md).
	StageConnLoopback = "loopback"
)

// Process is what the server-side commands share: NATS (embedded or
// external), the registry, the logger, the HTTP port and a publisher.
// Start returns it; Run runs stages in it; Close releases it.
type Process struct {
	Log *slog.Logger
	// Reg holds every metric of the process (the stages', the
	// publishers', the ingress's, the stream collector).
	Reg *prometheus.Registry
	// NC, JS and Pub are the process's own admin connection, for drivers
	// (demo, bench, eval) that publish turns and read outputs; each stage
	// has a connection of its own.
	NC  *nats.Conn
	JS  jetstream.JetStream
	Pub *streams.Publisher
	// HTTP is the HTTP port (HTTP.Addr() once listening).
	HTTP *telemetry.Server
	// Prov is the streams' configuration as provisioned.
	Prov natsserver.ProvisionConfig

	cfg  Config
	srv  *server.Server      // nil with an external NATS
	lock *natsserver.DirLock // the data directory's, with the embedded server
	// experiments is Stages.Given.Experiments once Run starts (the dashboard
	// reads it from its own goroutines).
	experiments atomic.Pointer[experiment.Assigner]
	closer      []func()
	cc          natsserver.ConnectConfig // how stages open their own connections
	conns       []*nats.Conn             // the stages' connections
	// keys are the embedded server's identities (nil with an external
	// NATS, where every connection uses the given credentials, or the
	// seeds of KeysDir).
	keys *natsserver.Keyring
	// seeds are Config.KeysDir's seed files, by identity.
	seeds natsserver.SeedDir
	// taskKeyLoaded is the task signing key, once loaded (taskKey).
	taskKeyLoaded *schemas.TaskKey
}

// link is one stage's own NATS connection: each stage consumes, acks and
// publishes on its own connection, so that one stage's traffic never
// queues behind another's in a shared socket and server read loop.
type link struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	pub *streams.Publisher
}

// stageLink opens the connection of one stage. On the embedded server it
// connects under the stage's own identity, whose permissions cover only
// what the stage consumes and produces (streams/permissions.go);
// permission violations are logged with the stage's name.
func (rt *Process) stageLink(stage, id string) (link, error) {
	cc := rt.cc
	cc.Name += "-" + stage
	switch {
	case rt.keys != nil:
		cc.NkeyFile = rt.keys.SeedFile(id)
	case rt.seeds != "":
		f, err := rt.seeds.Seed(id)
		if err != nil {
			return link{}, fmt.Errorf("%s: %w", stage, err)
		}
		cc.NkeyFile = f
	}
	errs := make(chan error, 8)
	cc.AsyncErrors = errs
	done := make(chan struct{})
	rt.closer = append(rt.closer, func() { close(done) })
	go func() {
		for {
			select {
			case err := <-errs:
				rt.Log.Error("NATS asynchronous error", "stage", stage, "err", err)
			case <-done:
				return
			}
		}
	}()
	nc, err := natsserver.Connect(cc)
	if err != nil {
		return link{}, fmt.Errorf("%s: %w", stage, err)
	}
	rt.conns = append(rt.conns, nc)
	js, err := natsserver.NewJetStream(nc)
	if err != nil {
		return link{}, fmt.Errorf("%s: jetstream: %w", stage, err)
	}
	return link{nc: nc, js: js, pub: streams.NewPublisher(js, rt.Reg, streams.PublisherConfig{})}, nil
}

// deps are what every stage on l is given: l's JetStream and publisher,
// the process's logger (with the stage's name) and registry.
func (l link) deps(rt *Process, stage string) streams.StageDeps {
	return streams.StageDeps{JS: l.js, Publisher: l.pub, Logger: rt.Log.With("stage", stage), Registerer: rt.Reg}
}

// Start brings up NATS, provisions the streams and opens the HTTP port;
// /readyz turns ready at the end.
func Start(ctx context.Context, cfg Config) (_ *Process, err error) {
	log := cmp.Or(cfg.Logger, slog.Default())
	if err := applyMemoryLimit(cfg.MemoryLimit); err != nil {
		return nil, err
	}
	stopHeapGoal, _, err := ApplyHeapGoal(cfg.HeapGoal, log)
	if err != nil {
		return nil, err
	}
	rt := &Process{cfg: cfg, Log: log, Reg: telemetry.NewRegistry(), Prov: cfg.Provision, closer: []func(){stopHeapGoal}}
	// Whatever started before a failure is released, in reverse order.
	defer func() {
		if err != nil {
			rt.Close()
		}
	}()
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
	rt.HTTP = telemetry.NewServer(rt.Reg, log)
	rt.HTTP.Limits.AllowedHosts = cfg.AllowedHosts
	rt.HTTP.TLSCert, rt.HTTP.TLSKey = cfg.HTTPTLSCert, cfg.HTTPTLSKey
	if cfg.HTTPAddr != "" {
		// On a loopback port the dashboard and /metrics stay open to this
		// machine (the Host check keeps rebinding pages out); elsewhere
		// they need a token with their role.
		host, _, _ := net.SplitHostPort(cfg.HTTPAddr)
		rt.HTTP.Access = telemetry.Access{Tokens: cfg.Tokens, OpenReads: natsserver.IsLoopbackHost(host)}
		if err := rt.HTTP.Listen(cfg.HTTPAddr); err != nil {
			return nil, err
		}
		rt.closer = append(rt.closer, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = rt.HTTP.Shutdown(sctx)
		})
	}
	cc := cfg.Connect
	cc.Name = cfg.Name
	loopback, bare, err := stageConn(cfg)
	if err != nil {
		return nil, err
	}
	if cc.URL == "" {
		dir, err := filepath.Abs(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		// One embedded server per data directory: the lock is held until
		// the server has shut down (Close).
		if rt.lock, err = natsserver.LockDataDir(dir); err != nil {
			return nil, err
		}
		keys, users, err := natsserver.ServerAuth(dir)
		if err != nil {
			return nil, err
		}
		rt.srv, err = natsserver.StartEmbedded(natsserver.ServerConfig{DataDir: dir, Listen: cfg.Listen,
			Users: users, SyncAlways: rt.Prov.AnyDurable(),
			TLSCert: cfg.NATSTLSCert, TLSKey: cfg.NATSTLSKey, Insecure: cfg.Insecure, Logger: log})
		if err != nil {
			return nil, err
		}
		if err := natsserver.WriteLocalURL(dir, rt.srv.ClientURL()); err != nil {
			return nil, fmt.Errorf("record the NATS address in the data directory: %w", err)
		}
		log.Info("embedded NATS server started", "listen", cfg.Listen, "data_dir", dir, "keys", natsserver.KeysDir(dir))
		// Tenants added or removed with rein keys take effect without a
		// restart.
		wctx, stopWatch := context.WithCancel(context.Background())
		watched := make(chan struct{})
		go func() {
			defer close(watched)
			natsserver.WatchTenants(wctx, rt.srv, dir, natsserver.DefaultKeyringPoll, log)
		}()
		rt.closer = append(rt.closer, func() { stopWatch(); <-watched })
		cc.InProcess, cc.InProcessUnbuffered = rt.srv, bare
		if loopback {
			cc.InProcess, cc.URL = nil, rt.srv.ClientURL()
		}
		cc.NkeyFile = keys.SeedFile(natsserver.IdentityAdmin)
		rt.keys = keys
	}
	provision := true
	if cfg.Connect.URL != "" && cfg.KeysDir != "" {
		rt.seeds = natsserver.SeedDir(cfg.KeysDir)
		id, f, err := rt.seeds.Own()
		if err != nil {
			return nil, err
		}
		cc.NkeyFile, provision = f, id == natsserver.IdentityAdmin
		log.Info("NATS identities from a keys directory: each stage connects as its own", "dir", cfg.KeysDir, "process_identity", id)
	}
	rt.HTTP.SetReady(false, "connecting to NATS")
	rt.cc = cc
	if rt.NC, err = natsserver.Connect(cc); err != nil {
		return nil, err
	}
	if rt.JS, err = natsserver.NewJetStream(rt.NC); err != nil {
		return nil, err
	}
	rt.HTTP.SetReady(false, "provisioning streams")
	pctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
	defer cancel()
	if provision {
		err = natsserver.Provision(pctx, rt.JS, rt.Prov, log)
	} else {
		err = rt.waitProvisioned(ctx, log)
	}
	if err != nil {
		return nil, err
	}
	rt.Pub = streams.NewPublisher(rt.JS, rt.Reg, streams.PublisherConfig{})
	// POST /v1/turns writes REIN_TURNS.
	rt.requireStreams(bus.StreamTurns)
	rt.Reg.MustRegister(telemetry.NewJetStreamCollector(rt.JS, natsserver.StreamNames))
	// The HTTP ingress and the NATS ingest (rein.ingest.>, where tenants'
	// identities send turns) publish under the ingress identity: turns
	// only. With a keys directory without ingress.nk (a stage's pod, which
	// holds only its own seed), this process takes no turns.
	if !rt.seeds.Has(natsserver.IdentityIngress) {
		log.Info("no ingress seed in the keys directory: POST /v1/turns and rein.ingest are not served by this process", "dir", cfg.KeysDir)
	} else {
		il, err := rt.stageLink(bus.StageIngress, natsserver.IdentityIngress)
		if err != nil {
			return nil, err
		}
		in, err := ingress.New(ingress.Config{MaxBytes: cfg.MaxEventBytes, TenantRate: cfg.IngressRate,
			TenantBurst: cfg.IngressBurst, TenantInFlight: cfg.IngressInFlight, Tokens: cfg.Tokens},
			ingress.Deps{Publisher: il.pub, Registerer: rt.Reg})
		if err != nil {
			return nil, err
		}
		rt.HTTP.Handle("POST /v1/turns", in)
		rt.HTTP.Handle("POST /v1/feedback", in.Feedback())
		stopIngest, err := in.ListenNATS(il.nc, 0)
		if err != nil {
			return nil, err
		}
		rt.closer = append(rt.closer, stopIngest)
	}
	// Labels are given with an operator token, never on open reads.
	canLabel := func(r *http.Request) bool {
		code, _ := cfg.Tokens.Authorize(r, telemetry.RoleOperator, "")
		return code == 0
	}
	dash, err := dashboard.New(dashboard.Config{LabelQueue: cfg.LabelQueue}, dashboard.Deps{JS: rt.JS, Gatherer: rt.Reg, Logger: log.With("component", "dashboard"),
		Reveal: dashboardReveal(cfg.DashboardReveal, cfg.Tokens), CanLabel: canLabel, Publisher: rt.Pub,
		Experiments: func(ctx context.Context, tenant, name string) (string, []experiment.Conversation, error) {
			return audit.ExperimentConversations(ctx, rt.JS, tenant, name)
		},
		Holdout: func(tenant string) (experiment.Tenant, bool) { return rt.experiments.Load().Tenant(tenant) },
	})
	if err != nil {
		return nil, err
	}
	dash.Register(rt.HTTP)
	// The dashboard samples the counters for its time windows while no
	// page is open; it stops with the process.
	dctx, stopDash := context.WithCancel(context.WithoutCancel(ctx))
	dashDone := make(chan struct{})
	go func() { defer close(dashDone); _ = dash.Run(dctx) }()
	rt.closer = append(rt.closer, func() { stopDash(); <-dashDone })
	mon, err := labels.NewMonitor(cfg.LabelMonitor, labels.MonitorDeps{JS: rt.JS, Registerer: rt.Reg, Logger: log.With("component", "label-monitor")})
	if err != nil {
		return nil, err
	}
	mctx, stopMon := context.WithCancel(context.WithoutCancel(ctx))
	monDone := make(chan struct{})
	go func() { defer close(monDone); _ = mon.Run(mctx) }()
	rt.closer = append(rt.closer, func() { stopMon(); <-monDone })
	rt.HTTP.SetReady(true, "")
	return rt, nil
}

// Close releases everything in reverse order: HTTP, NATS connection,
// embedded server (which flushes JetStream to disk).
func (rt *Process) Close() {
	for _, nc := range rt.conns {
		_ = nc.FlushTimeout(2 * time.Second)
		nc.Close()
	}
	if rt.NC != nil {
		_ = rt.NC.FlushTimeout(2 * time.Second)
		rt.NC.Close()
	}
	for i := len(rt.closer) - 1; i >= 0; i-- {
		rt.closer[i]()
	}
	if rt.srv != nil {
		rt.srv.Shutdown()
		rt.srv.WaitForShutdown()
	}
	_ = rt.lock.Unlock()
}

// Server is the embedded NATS server (nil with an external NATS), for
// the bench's reading of what each connection exchanged with it.
func (rt *Process) Server() *server.Server { return rt.srv }

// watchModel makes /readyz report the model endpoint while its circuit
// breaker is open (status degraded: see telemetry.Server.AddCheck).
func (rt *Process) watchModel(endpoint string, c llm.Client) {
	if rt.HTTP == nil {
		return
	}
	rt.HTTP.AddCheck("model "+endpoint, func() error {
		if !llm.IsAvailable(c) {
			return llm.ErrUnavailable
		}
		return nil
	})
}

// dashboardReveal is who sees the dashboard's free text: everyone with
// reveal, else requests carrying a token of the operator role.
func dashboardReveal(reveal bool, tokens *telemetry.Tokens) func(*http.Request) bool {
	if reveal {
		return func(*http.Request) bool { return true }
	}
	return func(r *http.Request) bool {
		code, _ := tokens.Authorize(r, telemetry.RoleOperator, "")
		return code == 0
	}
}

// Connections describes the process's NATS connections for a report of a
// stuck run: how often each reconnected (a connection the server dropped,
// e.g. as a slow consumer, loses the core messages sent meanwhile) and its
// last error, and the embedded server's count of slow consumers.
func (rt *Process) Connections() string {
	var b strings.Builder
	for _, nc := range append([]*nats.Conn{rt.NC}, rt.conns...) {
		if nc == nil {
			continue
		}
		fmt.Fprintf(&b, "%s: reconnects %d", nc.Opts.Name, nc.Stats().Reconnects)
		if err := nc.LastError(); err != nil {
			fmt.Fprintf(&b, " (last error %v)", err)
		}
		b.WriteString("; ")
	}
	if rt.srv != nil {
		if v, err := rt.srv.Varz(nil); err == nil {
			fmt.Fprintf(&b, "server slow consumers %d", v.SlowConsumers)
		}
	}
	return b.String()
}

// provisionPoll is how often a process that may not create the streams
// looks for them again.
const provisionPoll = 2 * time.Second

// waitProvisioned waits until the streams exist, for a process whose
// identity may not create them: started before the deployment's
// provisioning job (rein provision) finished, it reports "waiting for
// rein provision" on /readyz instead of exiting, so its pod is not
// restarted in a loop. Any other failure, or ctx ending, returns.
func (rt *Process) waitProvisioned(ctx context.Context, log *slog.Logger) error {
	logged := false
	for {
		cctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
		err := natsserver.CheckProvisioned(cctx, rt.JS)
		cancel()
		if err == nil || !errors.Is(err, jetstream.ErrStreamNotFound) {
			return err
		}
		if !logged {
			log.Warn("the streams are not provisioned yet: waiting for rein provision", "err", err)
			rt.HTTP.SetReady(false, "waiting for rein provision")
			logged = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (stopped while waiting for rein provision)", err)
		case <-time.After(provisionPoll):
		}
	}
}

// stageConn tells whether the stages reach the embedded server on its
// loopback port or its bare pipe, and refuses a setting it cannot honour:
// the port must be plain (a TLS certificate need not name the loopback
// address) and bound to a loopback address (the stages' traffic never
// leaves the host).
func stageConn(cfg Config) (loopback, bare bool, err error) {
	switch cfg.StageConn {
	case "", StageConnInProcess:
		return false, false, nil
	case StageConnBarePipe:
		return false, true, nil
	case StageConnLoopback:
	default:
		return false, false, fmt.Errorf("stage connection %q: want %s, %s or %s", cfg.StageConn, StageConnInProcess, StageConnLoopback, StageConnBarePipe)
	}
	if cfg.Connect.URL != "" {
		return false, false, fmt.Errorf("stage connection %s: only the embedded server has one (an external NATS is reached at its URL)", StageConnLoopback)
	}
	if cfg.NATSTLSCert != "" {
		return false, false, fmt.Errorf("stage connection %s: the embedded server's port requires TLS here; use %s", StageConnLoopback, StageConnInProcess)
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if err != nil || !natsserver.IsLoopbackHost(host) {
		return false, false, fmt.Errorf("stage connection %s: the embedded server must listen on a loopback address (--nats-listen %q)", StageConnLoopback, cfg.Listen)
	}
	return true, false, nil
}

package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/experiment"
	reinlabels "github.com/reinception/rein/internal/labels"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// contentSecurityPolicy allows nothing from outside rein's own port.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Deps are the dashboard's dependencies.
type Deps struct {
	// JS reads recent outcomes, conversations and (when the gatherer has
	// no JetStream collector) consumer state.
	JS jetstream.JetStream
	// Gatherer is the registry /metrics serves.
	Gatherer prometheus.Gatherer
	// Logger (nil: discard).
	Logger *slog.Logger
	// Reveal tells whether a request may see free text: what users and the
	// agent said, tool results and arguments, escalation summaries, the
	// evidence quote. Nil, or false for a request: they are redacted.
	Reveal func(r *http.Request) bool
	// CanLabel tells whether a request may label turns (the operator
	// role); Publisher stores the labels. Either nil: no label form.
	CanLabel  func(r *http.Request) bool
	Publisher *streams.Publisher
	// Experiments reads a tenant's holdout experiment (nil: the
	// experiment pages answer 404); Holdout says what the experiments
	// file in force says of a tenant (nil or false: not known here).
	Experiments ExperimentReader
	Holdout     func(tenant string) (experiment.Tenant, bool)
}

// Mux is what Register mounts on (*http.ServeMux and telemetry.Server).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Dashboard serves the overview and conversation pages.
type Dashboard struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	tmpl *template.Template
	now  func() time.Time

	hist   *history
	ledger *ledger

	mu    sync.Mutex // guards the fields below
	cache map[Query]cached
	tail  outcomeTail
}

// Query selects what an overview covers: a window and, optionally, one
// tenant and one error type.
type Query struct {
	Window    string // a Windows name; "" is WindowAll
	Tenant    string // "" every tenant
	ErrorType string // "" every error type
	Outcome   string // the conversation list's outcome filter: "" every one
}

type cached struct {
	o  *Overview
	at time.Time
}

// maxCached bounds the overviews kept for CacheTTL (one per query).
const maxCached = 64

// New builds a dashboard; cfg is completed with defaults and validated.
func New(cfg Config, deps Deps) (*Dashboard, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.LabelQueue.Days == nil {
		// Each label of a day's queue would read the tenant's day again.
		cfg.LabelQueue.Days = &reinlabels.DayCache{}
	}
	if deps.JS == nil {
		return nil, fmt.Errorf("%w: JS", ErrMissingDep)
	}
	if deps.Gatherer == nil {
		return nil, fmt.Errorf("%w: Gatherer", ErrMissingDep)
	}
	log := deps.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"trendW": func() int { return TrendWidth },
		"trendH": func() int { return TrendHeight },
		"pct":    func(f float64) float64 { return 100 * (1 - f) },
		"dict": func(kv ...any) map[string]any {
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			return m
		},
	}).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard templates: %w", err)
	}
	d := &Dashboard{cfg: cfg, deps: deps, log: log.With("component", "dashboard"), tmpl: tmpl, now: time.Now, cache: map[Query]cached{}}
	d.hist = newHistory(d.now(), cfg.SampleInterval/2)
	d.ledger = newLedger(d.hist.started)
	return d, nil
}

// Run samples the counters every SampleInterval until ctx is done, so the
// time windows and sparklines have data while no page is open.
func (d *Dashboard) Run(ctx context.Context) error {
	// The first sample is the baseline of "new dead letters": what is in
	// REIN_DLQ when rein starts is not news.
	d.sample(ctx)
	t := time.NewTicker(d.cfg.SampleInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			d.sample(ctx)
		}
	}
}

// sample reads the counters and the dead-letter count into the history.
func (d *Dashboard) sample(ctx context.Context) (sample, []string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ReadTimeout)
	defer cancel()
	var problems []string
	s := sample{at: d.now()}
	mv, err := readMetrics(d.deps.Gatherer)
	if err != nil {
		problems = append(problems, err.Error())
	}
	s.mv = mv
	if n, err := readDeadLetters(ctx, d.deps.JS); err == nil {
		s.dlq, s.hasQ = n, true
	}
	if err := d.ledger.refresh(ctx, d.deps.JS, s.at); err != nil {
		problems = append(problems, err.Error())
	}
	d.hist.add(s)
	return s, problems
}

// Register mounts the dashboard's routes. The overview is GET /{$} (the
// root only, so unknown paths still get a 404).
func (d *Dashboard) Register(mux Mux) {
	mux.Handle("GET /{$}", http.HandlerFunc(d.serveOverview))
	mux.Handle("GET /conversations/{tenant}/{conv}", http.HandlerFunc(d.serveConversation))
	mux.Handle("GET /api/overview", http.HandlerFunc(d.serveOverviewJSON))
	mux.Handle("GET /api/conversations/{tenant}/{conv}", http.HandlerFunc(d.serveConversationJSON))
	mux.Handle("GET /search", http.HandlerFunc(d.serveSearch))
	mux.Handle("POST /conversations/{tenant}/{conv}/labels", http.NewCrossOriginProtection().Handler(http.HandlerFunc(d.serveLabel)))
	mux.Handle("GET /experiments/{tenant}", http.HandlerFunc(d.serveExperiment))
	mux.Handle("GET /labels/{tenant}", http.HandlerFunc(d.serveQuality))
	mux.Handle("GET /api/labels/{tenant}", http.HandlerFunc(d.serveQualityJSON))
	mux.Handle("GET /api/experiments/{tenant}", http.HandlerFunc(d.serveExperimentJSON))
	sub, _ := fs.Sub(assetFS, "assets") // the directory is embedded; cannot fail
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	mux.Handle("GET /assets/{file}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

// Overview computes the overview of every tenant since rein started (see
// OverviewFor).
func (d *Dashboard) Overview(ctx context.Context) *Overview {
	o, _ := d.OverviewFor(ctx, Query{})
	return o
}

// OverviewFor computes the overview of q now (or returns the one computed
// within CacheTTL). What cannot be read is listed in Problems; the rest is
// filled. It wraps ErrBadQuery for an unknown window and schemas' id
// errors for a tenant that is not a valid id.
func (d *Dashboard) OverviewFor(ctx context.Context, q Query) (*Overview, error) {
	w, err := ParseWindow(q.Window)
	if err != nil {
		return nil, err
	}
	q.Window = w.Name
	if q.Tenant != "" && !schemas.ValidID(q.Tenant) {
		return nil, fmt.Errorf("%w: tenant %q", schemas.ErrBadID, q.Tenant)
	}
	if q.ErrorType != "" && !schemas.ValidID(q.ErrorType) {
		return nil, fmt.Errorf("%w: error type %q", schemas.ErrBadID, q.ErrorType)
	}
	if q.Outcome != "" && !slices.Contains(decisionOutcomes, q.Outcome) {
		return nil, fmt.Errorf("%w: outcome %q (want one of %s)", ErrBadQuery, q.Outcome, strings.Join(decisionOutcomes, ", "))
	}
	f := filter{tenant: q.Tenant, errorType: q.ErrorType}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if c, ok := d.cache[q]; ok && d.cfg.CacheTTL > 0 && now.Sub(c.at) < d.cfg.CacheTTL {
		return c.o, nil
	}
	// The result is shared with other requests, so one client going away
	// must not cut the reads short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ReadTimeout)
	defer cancel()
	o := &Overview{GeneratedAt: now.UTC(), UpdatedText: timeText(now), DeadLetters: count("dead_letters", 0), Window: w, Tenant: q.Tenant, ErrorType: q.ErrorType, Outcome: q.Outcome}
	cur, problems := d.sample(ctx)
	o.Problems = append(o.Problems, problems...)
	if err := readJetStreamState(ctx, d.deps.JS, o, now); err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	// Traffic comes from the streams, which hold every replica's messages
	// and their times: a window reaches back its whole span, whenever this
	// process started ("all": since it started).
	flowFrom := d.hist.started
	if w.Span > 0 {
		flowFrom = now.Add(-w.Span)
	}
	o.FlowCoverage = fmt.Sprintf("%s (%s to %s), every replica", w.Text, timeText(flowFrom), timeText(now))
	flows, err := readFlows(ctx, d.deps.JS, flowFrom, now)
	if err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	o.Flows = flows
	var since time.Time // zero: since the dashboard started
	if w.Span > 0 {
		since = now.Add(-w.Span)
	}
	lv, behind := d.ledger.view(since, now)
	o.Deployment = deploymentOf(lv, f, behind)
	o.Conversations = d.ledger.conversations(since, f, q.Outcome)
	o.OutcomeLinks = outcomeLinks(q)
	view, from := cur.mv, d.hist.started
	if w.Span > 0 {
		base, full := d.hist.at(now.Add(-w.Span))
		view = cur.mv.sub(base.mv)
		if full {
			from = now.Add(-w.Span)
		}
	}
	o.Coverage = coverage(w, from, now, d.hist.started)
	view.fill(o, f)
	o.Latency = view.latencies()
	for i := range o.Tenants {
		o.Tenants[i].URL = overviewURL(Query{Window: q.Window, Tenant: o.Tenants[i].Name, ErrorType: q.ErrorType})
	}
	for i := range o.ErrorTypes {
		o.ErrorTypes[i].URL = overviewURL(Query{Window: q.Window, Tenant: q.Tenant, ErrorType: o.ErrorTypes[i].Name})
	}
	o.Trend = d.hist.trend(from, now, f, cur)
	o.Windows = windowLinks(q)
	o.AllURL = overviewURL(Query{Window: q.Window})
	o.Alarms = d.alarms(cur, now)
	if err := d.tail.refresh(ctx, d.deps.JS, d.cfg.RecentOutcomes); err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	o.Recent = d.tail.items
	if q.Tenant != "" || q.ErrorType != "" {
		o.Recent = nil
		for _, r := range d.tail.items {
			if f.tenantOK(r.Tenant) && (q.ErrorType == "" || r.ErrorType == q.ErrorType) {
				o.Recent = append(o.Recent, r)
			}
		}
	}
	for _, p := range o.Problems {
		d.log.Warn("overview incomplete", "problem", p)
	}
	if len(d.cache) >= maxCached {
		clear(d.cache)
	}
	d.cache[q] = cached{o: o, at: now}
	return o, nil
}

// Conversation reads one conversation's timeline. It wraps ErrNotFound
// when no stream holds an event of it, and schemas' id errors for ids that
// are not NATS-token safe.
func (d *Dashboard) Conversation(ctx context.Context, tenant, conv string) (Conversation, error) {
	if err := schemas.CheckIDs(tenant, conv); err != nil {
		return Conversation{Tenant: tenant, Conversation: conv}, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.ReadTimeout)
	defer cancel()
	return readConversation(ctx, d.deps.JS, tenant, conv, d.cfg.MaxConversationEvents)
}

type page struct {
	Title        string
	PollMS       int64
	API          string // what the overview's script polls
	Overview     *Overview
	Conversation *Conversation
	Search       *searchPage
	Experiment   *ExperimentPage
	Quality      *QualityPage
	Status       int
	Error        string
	// CanLabel offers the label form on each detection; Labelled is the
	// turn just labelled (Unchanged: as it was).
	CanLabel  bool
	Labelled  string
	Unchanged bool
}

// requestQuery reads ?window=, ?tenant= and ?type=.
func requestQuery(r *http.Request) Query {
	v := r.URL.Query()
	return Query{Window: v.Get("window"), Tenant: v.Get("tenant"), ErrorType: v.Get("type"), Outcome: v.Get("outcome")}
}

func (d *Dashboard) serveOverview(w http.ResponseWriter, r *http.Request) {
	q := requestQuery(r)
	o, err := d.OverviewFor(r.Context(), q)
	if err != nil {
		d.render(w, "error.html", page{Title: d.cfg.Title, Status: http.StatusBadRequest, Error: err.Error()})
		return
	}
	if !d.reveals(r) {
		ro := o.redacted()
		o = &ro
	}
	d.render(w, "overview.html", page{Title: d.cfg.Title, PollMS: d.cfg.PollInterval.Milliseconds(), Overview: o, Status: http.StatusOK,
		API: "/api/overview" + overviewQuery(q)})
}

func (d *Dashboard) serveOverviewJSON(w http.ResponseWriter, r *http.Request) {
	o, err := d.OverviewFor(r.Context(), requestQuery(r))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	if !d.reveals(r) {
		ro := o.redacted()
		o = &ro
	}
	writeJSON(w, http.StatusOK, o)
}

func (d *Dashboard) conversationStatus(r *http.Request) (Conversation, int, error) {
	c, err := d.Conversation(r.Context(), r.PathValue("tenant"), r.PathValue("conv"))
	if !d.reveals(r) {
		c = c.redacted()
	}
	switch {
	case err == nil:
		return c, http.StatusOK, nil
	case errors.Is(err, schemas.ErrBadID):
		return c, http.StatusBadRequest, err
	case errors.Is(err, ErrNotFound):
		return c, http.StatusNotFound, err
	default:
		d.log.Warn("conversation view", "tenant", c.Tenant, "conversation", c.Conversation, "err", err)
		return c, http.StatusInternalServerError, err
	}
}

func (d *Dashboard) serveConversation(w http.ResponseWriter, r *http.Request) {
	c, status, err := d.conversationStatus(r)
	p := page{Title: d.cfg.Title, Conversation: &c, Status: status, CanLabel: d.labelling(r)}
	if v := r.URL.Query().Get("labelled"); v != "" {
		if _, err := strconv.Atoi(v); err == nil {
			p.Labelled, p.Unchanged = v, r.URL.Query().Get("unchanged") != ""
		}
	}
	if err != nil {
		p.Error = err.Error()
	}
	d.render(w, "conversation.html", p)
}

func (d *Dashboard) serveConversationJSON(w http.ResponseWriter, r *http.Request) {
	c, status, err := d.conversationStatus(r)
	if err != nil {
		writeJSON(w, status, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, status, c)
}

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

// render executes a template into a buffer first, so a template error
// yields a clean 500 instead of half a page.
func (d *Dashboard) render(w http.ResponseWriter, name string, p page) {
	var buf bytes.Buffer
	if err := d.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		d.log.Error("render", "template", name, "err", err)
		http.Error(w, "dashboard: cannot render page", http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(p.Status)
	_, _ = w.Write(buf.Bytes())
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "dashboard: cannot encode JSON", http.StatusInternalServerError)
		return
	}
	securityHeaders(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

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
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/schemas"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// contentSecurityPolicy allows nothing from outside rein's own port.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Deps are the dashboard's dependencies.
type Deps struct {
	// JS reads recent outcomes, conversations and (when the gatherer has
	// no JetStream collector) consumer state.
	JS jetstream.JetStream
	// Gatherer is the registry /metrics serves.
	Gatherer prometheus.Gatherer
	// Logger (nil: discard).
	Logger *slog.Logger
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

	mu       sync.Mutex // guards the fields below
	cached   *Overview
	cachedAt time.Time
	tail     outcomeTail
}

// New builds a dashboard; cfg is completed with defaults and validated.
func New(cfg Config, deps Deps) (*Dashboard, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
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
	tmpl, err := template.ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard templates: %w", err)
	}
	return &Dashboard{cfg: cfg, deps: deps, log: log.With("component", "dashboard"), tmpl: tmpl, now: time.Now}, nil
}

// Register mounts the dashboard's routes. The overview is GET /{$} (the
// root only, so unknown paths still get a 404).
func (d *Dashboard) Register(mux Mux) {
	mux.Handle("GET /{$}", http.HandlerFunc(d.serveOverview))
	mux.Handle("GET /conversations/{tenant}/{conv}", http.HandlerFunc(d.serveConversation))
	mux.Handle("GET /api/overview", http.HandlerFunc(d.serveOverviewJSON))
	mux.Handle("GET /api/conversations/{tenant}/{conv}", http.HandlerFunc(d.serveConversationJSON))
	sub, _ := fs.Sub(assetFS, "assets") // the directory is embedded; cannot fail
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	mux.Handle("GET /assets/{file}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	}))
}

// Overview computes the overview now (or returns the one computed within
// CacheTTL). What cannot be read is listed in Problems; the rest is filled.
func (d *Dashboard) Overview(ctx context.Context) *Overview {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if d.cached != nil && d.cfg.CacheTTL > 0 && now.Sub(d.cachedAt) < d.cfg.CacheTTL {
		return d.cached
	}
	// The result is shared with other requests, so one client going away
	// must not cut the reads short.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.cfg.ReadTimeout)
	defer cancel()
	o := &Overview{GeneratedAt: now.UTC(), UpdatedText: timeText(now), DeadLetters: count("dead_letters", 0)}
	mv, err := readMetrics(d.deps.Gatherer)
	if err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	mv.fill(o)
	if err := readJetStreamState(ctx, d.deps.JS, o); err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	if err := d.tail.refresh(ctx, d.deps.JS, d.cfg.RecentOutcomes); err != nil {
		o.Problems = append(o.Problems, err.Error())
	}
	o.Recent = d.tail.items
	for _, p := range o.Problems {
		d.log.Warn("overview incomplete", "problem", p)
	}
	d.cached, d.cachedAt = o, now
	return o
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
	Overview     *Overview
	Conversation *Conversation
	Status       int
	Error        string
}

func (d *Dashboard) serveOverview(w http.ResponseWriter, r *http.Request) {
	d.render(w, "overview.html", page{Title: d.cfg.Title, PollMS: d.cfg.PollInterval.Milliseconds(), Overview: d.Overview(r.Context()), Status: http.StatusOK})
}

func (d *Dashboard) serveOverviewJSON(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, d.Overview(r.Context()))
}

func (d *Dashboard) conversationStatus(r *http.Request) (Conversation, int, error) {
	c, err := d.Conversation(r.Context(), r.PathValue("tenant"), r.PathValue("conv"))
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
	p := page{Title: d.cfg.Title, Conversation: &c, Status: status}
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

package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{}, true},
		{"no recent list", Config{RecentOutcomes: -1}, false},
		{"huge recent list", Config{RecentOutcomes: 5000}, false},
		{"poll too fast", Config{PollInterval: time.Millisecond}, false},
		{"negative read timeout", Config{ReadTimeout: -time.Second}, false},
		{"negative event limit", Config{MaxConversationEvents: -3}, false},
		{"cache disabled", Config{CacheTTL: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.WithDefaults().Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestNewNeedsDeps(t *testing.T) {
	if _, err := New(Config{}, Deps{Gatherer: prometheus.NewRegistry()}); !errors.Is(err, ErrMissingDep) {
		t.Fatalf("New without JS = %v, want ErrMissingDep", err)
	}
}

func TestOverviewNumbers(t *testing.T) {
	type row struct{ name, count, rate string }
	for _, tc := range []struct {
		name        string
		decisions   map[[2]string]float64
		activations map[[2]string]float64
		rate        string
		outcomes    []string // name=count
		types       []row
		tenants     []row // name, decisions, rate
	}{
		{
			name: "nothing yet", rate: "n/a",
			outcomes: []string{"activated=0", "clear=0", "failed=0"},
		},
		{
			// The failed decision judged nothing: 4 activated of 11 judged.
			name:        "two tenants",
			decisions:   map[[2]string]float64{{"a", "activated"}: 3, {"a", "clear"}: 5, {"a", "failed"}: 1, {"b", "activated"}: 1, {"b", "clear"}: 2},
			activations: map[[2]string]float64{{"a", "unsupported_parameter"}: 2, {"a", "anaphora"}: 1, {"b", "anaphora"}: 1},
			rate:        "36.4%",
			outcomes:    []string{"activated=4", "clear=7", "failed=1"},
			types:       []row{{"anaphora", "2", "18.2%"}, {"unsupported_parameter", "2", "18.2%"}},
			tenants:     []row{{"a", "9", "37.5%"}, {"b", "3", "33.3%"}},
		},
		{
			name:      "only failures: nothing judged",
			decisions: map[[2]string]float64{{"a", "failed"}: 4},
			rate:      "n/a",
			outcomes:  []string{"activated=0", "clear=0", "failed=4"},
			tenants:   []row{{"a", "4", "n/a"}},
		},
		{
			name:      "an unknown outcome is listed after the known ones",
			decisions: map[[2]string]float64{{"a", "clear"}: 1, {"a", "skipped"}: 1},
			rate:      "0.0%",
			outcomes:  []string{"activated=0", "clear=1", "failed=0", "skipped=1"},
			tenants:   []row{{"a", "2", "0.0%"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			dec := telemetry.NewCounterVec(reg, telemetry.MDetectorDecisions, "d", "tenant", "outcome")
			act := telemetry.NewCounterVec(reg, telemetry.MDetectorActivations, "a", "tenant", "error_type")
			for k, v := range tc.decisions {
				dec.WithLabelValues(k[0], k[1]).Add(v)
			}
			for k, v := range tc.activations {
				act.WithLabelValues(k[0], k[1]).Add(v)
			}
			mv, err := readMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			var o Overview
			mv.fill(&o, filter{})
			if o.ActivationRate.Text != tc.rate {
				t.Errorf("rate %q, want %q", o.ActivationRate.Text, tc.rate)
			}
			var outcomes []string
			for _, c := range o.Outcomes {
				outcomes = append(outcomes, c.Name+"="+c.Text)
			}
			if !slices.Equal(outcomes, tc.outcomes) {
				t.Errorf("outcomes %v, want %v", outcomes, tc.outcomes)
			}
			var types []row
			for _, s := range o.ErrorTypes {
				types = append(types, row{s.Name, s.Count.Text, s.Rate.Text})
			}
			if !slices.Equal(types, tc.types) {
				t.Errorf("error types %v, want %v", types, tc.types)
			}
			var tenants []row
			for _, s := range o.Tenants {
				tenants = append(tenants, row{s.Name, s.Decisions.Text, s.Rate.Text})
			}
			if !slices.Equal(tenants, tc.tenants) {
				t.Errorf("tenants %v, want %v", tenants, tc.tenants)
			}
		})
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

func TestRoutes(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serve(t, Config{})
	for _, tc := range []struct {
		path, ctype string
		status      int
		contains    []string
	}{
		{"/", "text/html", 200, []string{`data-testid="activation-rate">36.4%<`, `data-testid="decisions-total">12<`, `data-testid="judged-total">11<`,
			`data-testid="dead-letters">1<`, `data-consumer="REIN_TURNS/detector"`, `href="/conversations/acme/conv-1"`}},
		{"/api/overview", "application/json", 200, []string{`"activation_rate":{"value":0.363`, `"text":"36.4%"`}},
		{"/?window=5m&tenant=globex", "text/html", 200, []string{`data-testid="tenant-filter">globex<`, `aria-current="page">5m<`}},
		{"/?type=anaphora", "text/html", 200, []string{`data-testid="type-filter">anaphora<`, `data-testid="activated-count">1<`, `href="/?type=unsupported_parameter"`}},
		{"/api/overview?type=bad%20type", "application/json", 400, []string{"error type"}},
		{"/?window=2d", "text/html", 400, []string{"window &#34;2d&#34; (want one of 1m, 5m, 15m, 1h, all)"}},
		{"/api/overview?tenant=no%20such", "application/json", 400, []string{"tenant"}},
		{"/search?q=conv-1", "text/html", 200, []string{`data-testid="conv-id">conv-1<`}},
		{"/search?q=acme/conv-2", "text/html", 200, []string{`data-testid="conv-id">conv-2<`}},
		{"/search?q=nobody", "text/html", 404, []string{"no conversation"}},
		{"/search?q=bad%20id", "text/html", 400, []string{"invalid identifier"}},
		{"/conversations/acme/conv-1", "text/html", 200, []string{`class="event planted-thought"`, `class="event step step-think injected"`,
			`data-testid="conv-planted">1<`}},
		{"/api/conversations/acme/conv-1", "application/json", 200, []string{`"kind":"planted-thought"`}},
		{"/conversations/acme/nobody", "text/html", 404, []string{"conversation not found"}},
		{"/api/conversations/acme/nobody", "application/json", 404, []string{"conversation not found"}},
		{"/conversations/acme/bad%20id", "text/html", 400, []string{"invalid identifier"}},
		{"/assets/dashboard.js", "text/javascript", 200, []string{"/api/overview"}},
		{"/assets/dashboard.css", "text/css", 200, []string{".planted-thought"}},
		{"/no-such-page", "text/plain", 404, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			res, body := get(t, srv.URL+tc.path)
			if res.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", res.StatusCode, tc.status, body)
			}
			if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
				t.Errorf("content type %q, want %q", ct, tc.ctype)
			}
			for _, s := range tc.contains {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
		})
	}
}

// The pages reference nothing outside rein's own port, and the CSP header
// forbids it, so the dashboard works offline.
func TestNoExternalResources(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serve(t, Config{})
	ref := regexp.MustCompile(`(?i)\b(?:src|href|action)\s*=\s*"([^"]*)"`)
	for _, path := range []string{"/", "/conversations/acme/conv-1"} {
		res, body := get(t, srv.URL+path)
		csp := res.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("%s: CSP %q", path, csp)
		}
		refs := ref.FindAllStringSubmatch(body, -1)
		if len(refs) == 0 {
			t.Fatalf("%s: no references found; the pattern is wrong", path)
		}
		for _, m := range refs {
			if u := m[1]; !strings.HasPrefix(u, "/") || strings.HasPrefix(u, "//") {
				t.Errorf("%s: external or relative reference %q", path, u)
			}
		}
		if strings.Contains(body, "http://") || strings.Contains(body, "https://") {
			t.Errorf("%s: page mentions an absolute URL", path)
		}
	}
}

// User text is escaped: the hostile turn shows as text, never as markup.
func TestConversationEscapesUserText(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serve(t, Config{})
	_, body := get(t, srv.URL+"/conversations/acme/conv-1")
	if strings.Contains(body, "<script>document") || strings.Contains(body, "<img src=x") {
		t.Fatalf("user text rendered as markup:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;") {
		t.Fatalf("escaped user text missing:\n%s", body)
	}
}

func TestConversationTimeline(t *testing.T) {
	f := newFixture(t)
	d, _ := f.serve(t, Config{})
	c, err := d.Conversation(context.Background(), tenant, conv)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range c.Events {
		k := e.Kind
		if e.Kind == "step" {
			k = e.Label
		}
		got = append(got, k)
	}
	want := []string{
		"user-turn", "detection", "task", "step 0: reply", "agent-turn",
		"user-turn", "detection", "planted-thought",
		"step 0: think (injected)", "step 1: tool_result think (injected)",
		"step 2: tool_call transfer_to_human_agents", "step 3: tool_result transfer_to_human_agents",
		"escalation", "agent-turn",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("timeline\n got %q\nwant %q", got, want)
	}
	if c.Turns != 2 || c.Activations != 1 || c.Planted != 1 || !c.Escalated {
		t.Fatalf("summary %+v", c)
	}
	if _, err := d.Conversation(context.Background(), tenant, "conv-404"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing conversation: %v", err)
	}
}

func TestConversationEventLimit(t *testing.T) {
	f := newFixture(t)
	d, _ := f.serve(t, Config{MaxConversationEvents: 2})
	c, err := d.Conversation(context.Background(), tenant, conv)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Truncated, []string{"REIN_STEPS", "REIN_TURNS"}) {
		t.Fatalf("truncated %v", c.Truncated)
	}
}

func TestRecentOutcomes(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		n     int
		kinds []string
	}{{0, nil}, {1, []string{"report"}}, {20, []string{"report", "escalation"}}} {
		d, _ := f.serve(t, Config{RecentOutcomes: tc.n, CacheTTL: -1})
		if tc.n == 0 {
			d.cfg.RecentOutcomes = 0 // WithDefaults turns 0 into 20
		}
		o := d.Overview(context.Background())
		var kinds []string
		for _, r := range o.Recent {
			kinds = append(kinds, r.Kind)
		}
		if !slices.Equal(kinds, tc.kinds) || len(o.Problems) > 0 {
			t.Errorf("n=%d: kinds %v (problems %v), want %v", tc.n, kinds, o.Problems, tc.kinds)
		}
	}
}

// Lag lists durable consumers only: the ordered consumers that replay,
// audit and the conversation view create are not a stage's backlog.
func TestConsumerLag(t *testing.T) {
	f := newFixture(t)
	d, _ := f.serve(t, Config{CacheTTL: -1})
	if _, err := d.Conversation(context.Background(), tenant, conv); err != nil { // leaves ordered consumers
		t.Fatal(err)
	}
	o := d.Overview(context.Background())
	if len(o.Problems) > 0 {
		t.Fatalf("problems %v", o.Problems)
	}
	if o.DeadLetters.Text != "1" {
		t.Errorf("dead letters %q, want 1", o.DeadLetters.Text)
	}
	var keys []string
	for _, c := range o.Consumers {
		keys = append(keys, c.Key())
	}
	if !slices.Equal(keys, []string{"REIN_TURNS/detector"}) {
		t.Fatalf("consumers %v, want only the durable detector", keys)
	}
	if c := o.Consumers[0]; c.Pending.Text != "3" || c.AckPending.Text != "0" || c.MaxAckPending.Value <= 0 || c.Stalled {
		t.Fatalf("detector lag %+v", c)
	}
}

// The recent list follows REIN_OUTCOMES: newest first, at most
// RecentOutcomes, new events picked up by the next refresh.
func TestRecentOutcomesFollowStream(t *testing.T) {
	f := newFixture(t)
	d, _ := f.serve(t, Config{RecentOutcomes: 3, CacheTTL: -1})
	ctx := context.Background()
	ids := func() []string {
		var out []string
		for _, r := range d.Overview(ctx).Recent {
			out = append(out, r.ID)
		}
		return out
	}
	if got := ids(); !slices.Equal(got, []string{"report-acme-conv-2-1", "escalation-acme-conv-1-2"}) {
		t.Fatalf("recent %v", got)
	}
	for i := range 3 {
		f.publish(ctx, t, bus.StreamOutcomes, bus.ReportSubject(tenant, "conv-3"), schemas.TypeReport,
			fmt.Sprintf("report-acme-conv-3-%d", i+1), schemas.Meta{Tenant: tenant, Conversation: "conv-3", Turn: i + 1},
			schemas.Report{Turn: i + 1, Report: "which one?", ErrorType: "anaphora"})
		if i == 0 {
			if got := ids(); !slices.Equal(got, []string{"report-acme-conv-3-1", "report-acme-conv-2-1", "escalation-acme-conv-1-2"}) {
				t.Fatalf("after one more: %v", got)
			}
		}
	}
	if got := ids(); !slices.Equal(got, []string{"report-acme-conv-3-3", "report-acme-conv-3-2", "report-acme-conv-3-1"}) {
		t.Fatalf("after three more: %v", got)
	}
}

func TestOverviewJSONShape(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serve(t, Config{})
	_, body := get(t, srv.URL+"/api/overview")
	var o Overview
	if err := json.Unmarshal([]byte(body), &o); err != nil {
		t.Fatal(err)
	}
	if o.Decisions.Value != 12 || o.Activated.Value != 4 || len(o.Recent) != 2 || o.Recent[0].URL != "/conversations/acme/conv-2" {
		t.Fatalf("overview %+v", o)
	}
}

func TestSortEvents(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := func(kind string, turn, step int, at time.Duration) Event {
		return Event{Kind: kind, Turn: turn, Step: step, Time: t0.Add(at), Label: fmt.Sprintf("%s/%d/%d", kind, turn, step)}
	}
	for _, tc := range []struct {
		name string
		in   []Event
		want []string
	}{
		{
			name: "same instant: pipeline order, then step number",
			in:   []Event{ev("agent-turn", 1, 0, 0), ev("step", 1, 2, 0), ev("step", 1, 1, 0), ev("planted-thought", 1, 0, 0), ev("detection", 1, 0, 0), ev("user-turn", 1, 0, 0)},
			want: []string{"user-turn/1/0", "detection/1/0", "planted-thought/1/0", "step/1/1", "step/1/2", "agent-turn/1/0"},
		},
		{
			name: "turns first, then time",
			in:   []Event{ev("user-turn", 2, 0, 0), ev("report", 1, 0, 2), ev("user-turn", 1, 0, 3), ev("escalation", 1, 0, 1)},
			want: []string{"escalation/1/0", "report/1/0", "user-turn/1/0", "user-turn/2/0"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sortEvents(tc.in)
			var got []string
			for _, e := range tc.in {
				got = append(got, e.Label)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

var _ Mux = (*telemetry.Server)(nil)

// The dashboard mounts on rein's HTTP port next to /metrics and the health
// endpoints without a pattern conflict.
func TestMountsOnTelemetryServer(t *testing.T) {
	f := newFixture(t)
	d, err := New(Config{}, Deps{JS: f.js.JS, Gatherer: f.reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := telemetry.NewServer(f.reg, slog.New(slog.DiscardHandler))
	d.Register(srv)
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	for path, want := range map[string]int{"/": 200, "/metrics": 200, "/healthz": 200, "/conversations/acme/conv-1": 200, "/nope": 404} {
		if res, _ := get(t, "http://"+srv.Addr()+path); res.StatusCode != want {
			t.Errorf("%s: status %d, want %d", path, res.StatusCode, want)
		}
	}
}

// Issue 32, LOW: a turn posted without `time` was shown and served as
// 0001-01-01T00:00:00Z. The timeline and /api/conversations show when the
// stream stored it (streams.EventTime), as rein audit does.
func TestAnEventWithoutTimeShowsTheStoreTime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	ev, err := schemas.NewEvent(schemas.TypeTurn, "turn-untimed", "", schemas.Meta{Tenant: tenant, Conversation: "untimed", Turn: 1},
		schemas.Turn{Role: schemas.RoleUser, Text: "hello", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	ev.SetTime(time.Time{})
	if _, err := f.pub.Publish(ctx, bus.StreamTurns, bus.TurnSubject(tenant, "untimed", schemas.RoleUser), &ev); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	d, srv := f.serve(t, Config{})
	c, err := d.Conversation(ctx, tenant, "untimed")
	if err != nil || len(c.Events) != 1 {
		t.Fatalf("conversation %+v, %v", c, err)
	}
	if at := c.Events[0].Time; at.Before(before) || at.After(after) {
		t.Fatalf("event time %v, want the store time (between %v and %v)", at, before, after)
	}
	_, body := get(t, srv.URL+"/api/conversations/"+tenant+"/untimed")
	if strings.Contains(body, "0001-01-01") {
		t.Fatalf("API serves the zero time: %s", body)
	}
}

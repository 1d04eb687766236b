package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/internal/testutil"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"github.com/reinception/rein/streams/natsserver"
)

// shown is what the overview displays, as read from the DOM, or as
// computed from /metrics.
type shown struct {
	Rate        string               `json:"rate"`
	Activated   string               `json:"activated"`
	Decisions   string               `json:"decisions"`
	DeadLetters string               `json:"deadLetters"`
	Outcomes    map[string]string    `json:"outcomes"`
	ErrorTypes  map[string][2]string `json:"errorTypes"` // count, rate
	Tenants     map[string][3]string `json:"tenants"`    // decisions, activated, rate
	Lag         [2]string            `json:"lag"`        // REIN_TURNS/detector pending, ack pending
	Polls       int                  `json:"-"`
}

const readOverview = `(() => {
  const q = (s) => { const e = document.querySelector(s); return e ? e.textContent.trim() : null; };
  const cell = (r, c) => { const e = r.querySelector("." + c); return e ? e.textContent.trim() : null; };
  const rows = (sel, attr, cells) => Object.fromEntries([...document.querySelectorAll(sel)]
    .map((r) => [r.getAttribute(attr), cells.length === 1 ? cell(r, cells[0]) : cells.map((c) => cell(r, c))]));
  const lag = document.querySelector('tr[data-consumer="REIN_TURNS/detector"]');
  return {
    rate: q('[data-testid="activation-rate"]'),
    activated: q('[data-testid="activated-count"]'),
    decisions: q('[data-testid="decisions-total"]'),
    deadLetters: q('[data-testid="dead-letters"]'),
    outcomes: rows('[data-testid="outcomes"] tr[data-outcome]', "data-outcome", ["count"]),
    errorTypes: rows('[data-testid="error-types"] tr[data-error-type]', "data-error-type", ["count", "rate"]),
    tenants: rows('[data-testid="tenants"] tr[data-tenant]', "data-tenant", ["decisions", "activated", "rate"]),
    lag: lag ? [cell(lag, "pending"), cell(lag, "ack-pending")] : ["", ""],
    polls: parseInt(document.body.dataset.polls || "0", 10),
  };
})()`

// pageState is shown plus the number of polls the script has done.
type pageState struct {
	shown
	Polls int `json:"polls"`
}

// fromMetrics scrapes /metrics and computes what the page must show, with
// its own arithmetic: rate = activated decisions / judged decisions (all
// but the failed).
func fromMetrics(t *testing.T, url string) shown {
	t.Helper()
	res, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	lbl := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	pct := func(a, b float64) string {
		if b == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*a/b)
	}
	var total, activated, failed float64
	tenantDec, tenantAct, tenantFailed, types := map[string]float64{}, map[string]float64{}, map[string]float64{}, map[string]float64{}
	// The page always lists the three outcomes the detector produces.
	outcomes := map[string]float64{"activated": 0, "clear": 0, "failed": 0}
	for _, m := range mfs[telemetry.MDetectorDecisions].GetMetric() {
		v := m.GetCounter().GetValue()
		total += v
		outcomes[lbl(m, "outcome")] += v
		tenantDec[lbl(m, "tenant")] += v
		switch lbl(m, "outcome") {
		case "activated":
			activated += v
			tenantAct[lbl(m, "tenant")] += v
		case "failed":
			failed += v
			tenantFailed[lbl(m, "tenant")] += v
		}
	}
	for _, m := range mfs[telemetry.MDetectorActivations].GetMetric() {
		types[lbl(m, "error_type")] += m.GetCounter().GetValue()
	}
	// Rates are over judged decisions: a failed one judged nothing.
	judged := total - failed
	s := shown{Rate: pct(activated, judged), Activated: num(activated), Decisions: num(total),
		Outcomes: map[string]string{}, ErrorTypes: map[string][2]string{}, Tenants: map[string][3]string{}}
	for k, v := range outcomes {
		s.Outcomes[k] = num(v)
	}
	for k, v := range types {
		s.ErrorTypes[k] = [2]string{num(v), pct(v, judged)}
	}
	for k, v := range tenantDec {
		s.Tenants[k] = [3]string{num(v), num(tenantAct[k]), pct(tenantAct[k], v-tenantFailed[k])}
	}
	for _, m := range mfs[telemetry.MStreamMessages].GetMetric() {
		if lbl(m, "stream") == bus.StreamDLQ {
			s.DeadLetters = num(m.GetGauge().GetValue())
		}
	}
	gauge := func(name string) string {
		for _, m := range mfs[name].GetMetric() {
			if lbl(m, "stream") == bus.StreamTurns && lbl(m, "consumer") == bus.DurableDetector {
				return num(m.GetGauge().GetValue())
			}
		}
		return ""
	}
	s.Lag = [2]string{gauge(telemetry.MConsumerPending), gauge(telemetry.MConsumerAckPending)}
	return s
}

// startChromium starts Debian's chromium headless with a fresh profile, or
// skips (fails under CI) when it is not installed.
func startChromium(t *testing.T) (context.Context, func()) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if _, serr := os.Stat("/usr/bin/chromium"); serr != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("chromium is not installed (CI must install it: apt-get install chromium)")
			}
			t.Skip("chromium not installed; apt-get install -y chromium to run the browser test")
		}
		path = "/usr/bin/chromium"
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	// Start the browser with no deadline (a deadline on the first Run would
	// bind the browser's life to it); each step gets its own below.
	if err := chromedp.Do(ctx); err != nil {
		cancelCtx()
		cancelAlloc()
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, func() { cancelCtx(); cancelAlloc() }
}

// TestBrowser loads the dashboard in headless Chromium: the numbers shown
// equal what /metrics says, they follow the registry live, and a click on
// a recent escalation opens its conversation with the planted thought.
func TestBrowser(t *testing.T) {
	f := newFixture(t)
	_, srv := f.serve(t, Config{PollInterval: 250 * time.Millisecond, CacheTTL: -1})

	browser, stop := startChromium(t)
	defer stop()
	// Everything the page logs as an error or throws fails the test
	// (a CSP violation, a 404 asset, a script error).
	var (
		mu       sync.Mutex
		problems []string
	)
	consoleCtx, stopConsole := context.WithCancel(browser)
	messages := chromedp.Console(consoleCtx)
	consoleDone := make(chan struct{})
	go func() {
		defer close(consoleDone)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning {
				mu.Lock()
				problems = append(problems, fmt.Sprintf("%s %s:%d %s", m.Type, m.URL, m.Line+1, m.Text))
				mu.Unlock()
			}
		}
	}()
	defer func() { stopConsole(); <-consoleDone }()

	step := func(name string, timeout time.Duration, fn func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(browser, timeout)
		defer cancel()
		if err := fn(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	read := func() pageState {
		t.Helper()
		var st pageState
		step("read overview", 30*time.Second, func(ctx context.Context) (err error) {
			st, err = chromedp.Run(ctx, chromedp.Evaluate[pageState](readOverview))
			return err
		})
		return st
	}

	// 1. The server-rendered overview matches /metrics.
	step("load overview", 60*time.Second, func(ctx context.Context) error {
		return chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="activation-rate"]`)))
	})
	want := fromMetrics(t, srv.URL)
	if want.Rate != "36.4%" || want.Decisions != "12" || want.DeadLetters != "1" || want.Lag != [2]string{"3", "0"} {
		t.Fatalf("fixture metrics are not what the test set up: %+v", want)
	}
	if got := read(); !reflect.DeepEqual(got.shown, want) {
		t.Fatalf("overview differs from /metrics\n page    %+v\n metrics %+v", got.shown, want)
	}

	// 2. Live: the registry moves on, the page follows through its script.
	f.decisions.WithLabelValues("globex", "activated").Add(2)
	f.decisions.WithLabelValues("globex", "clear").Add(1)
	f.activations.WithLabelValues("globex", "contradiction").Add(2)
	want = fromMetrics(t, srv.URL)
	if want.Rate != "42.9%" || want.ErrorTypes["contradiction"] != [2]string{"2", "14.3%"} {
		t.Fatalf("metrics after the update: %+v", want)
	}
	var last pageState
	func() {
		defer func() {
			if t.Failed() {
				t.Logf("last read: page %+v after %d polls\nwant %+v", last.shown, last.Polls, want)
			}
		}()
		testutil.CheckFor(t, 60*time.Second, "the page did not pick up the new metric values", func() bool {
			last = read()
			return last.Polls > 0 && reflect.DeepEqual(last.shown, want)
		})
	}()

	// 3. Recent outcomes link to their conversation; a click opens it.
	step("open conversation", 60*time.Second, func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
			chromedp.Click(chromedp.CSS(`ol[data-testid="recent"] li.escalation a.conversation-link`))))
		if err != nil {
			return err
		}
		return chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`li.event.planted-thought`)))
	})
	type convState struct {
		Path       string   `json:"path"`
		Title      string   `json:"title"`
		Planted    []string `json:"planted"`
		Injected   int      `json:"injected"`
		Kinds      []string `json:"kinds"`
		UserTexts  []string `json:"userTexts"`
		Markup     int      `json:"markup"`
		Escalation string   `json:"escalation"`
	}
	var cs convState
	step("read conversation", 30*time.Second, func(ctx context.Context) (err error) {
		cs, err = chromedp.Run(ctx, chromedp.Evaluate[convState](`(() => ({
  path: location.pathname,
  title: document.title,
  planted: [...document.querySelectorAll("li.event.planted-thought .text")].map((e) => e.textContent),
  injected: document.querySelectorAll("li.event.step.injected").length,
  kinds: [...document.querySelectorAll('ol[data-testid="timeline"] > li')].map((e) => e.dataset.kind),
  userTexts: [...document.querySelectorAll("li.event.user-turn .text")].map((e) => e.textContent),
  markup: document.querySelectorAll("main img, main script").length,
  escalation: (document.querySelector("li.event.escalation .text") || {}).textContent || "",
}))()`))
		return err
	})
	if cs.Path != "/conversations/acme/conv-1" {
		t.Errorf("clicked through to %q", cs.Path)
	}
	if len(cs.Planted) != 1 || cs.Planted[0] != plantedText {
		t.Errorf("planted thoughts %q, want [%q]", cs.Planted, plantedText)
	}
	if cs.Injected != 2 {
		t.Errorf("%d injected steps, want 2 (the think call and its result)", cs.Injected)
	}
	if cs.Escalation != escSummary {
		t.Errorf("escalation %q", cs.Escalation)
	}
	if len(cs.UserTexts) != 2 || cs.UserTexts[1] != hostileText || cs.Markup != 0 || strings.Contains(cs.Title, "pwned") {
		t.Errorf("user text not shown as text: texts %q, markup elements %d, title %q", cs.UserTexts, cs.Markup, cs.Title)
	}
	if len(cs.Kinds) != 14 {
		t.Errorf("timeline kinds %q", cs.Kinds)
	}

	// 4. The window selector: a window is a link; its page polls its own
	// window and says what it covers.
	type winState struct {
		Current  string `json:"current"`
		Coverage string `json:"coverage"`
		API      string `json:"api"`
		Sparks   int    `json:"sparks"`
	}
	step("choose a window", 60*time.Second, func(ctx context.Context) error {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`nav[data-testid="windows"]`))); err != nil {
			return err
		}
		_, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
			chromedp.Click(chromedp.CSS(`nav[data-testid="windows"] a[data-window="5m"]`))))
		return err
	})
	var ws winState
	step("read the window", 30*time.Second, func(ctx context.Context) (err error) {
		ws, err = chromedp.Run(ctx, chromedp.Evaluate[winState](`(() => ({
  current: (document.querySelector('nav[data-testid="windows"] a[aria-current="page"]') || {}).textContent || "",
  coverage: document.querySelector('[data-testid="coverage"]').textContent,
  api: document.body.dataset.api,
  sparks: document.querySelectorAll('svg.spark[data-testid^="trend-"] polyline').length,
}))()`))
		return err
	})
	if ws.Current != "5m" || !strings.Contains(ws.Coverage, "last 5 minutes") || ws.API != "/api/overview?window=5m" || ws.Sparks != 2 {
		t.Errorf("window page: %+v", ws)
	}

	// 4b. Traffic and the every-replica decisions are the deployment's:
	// turns and detections another process stores (its own connection and
	// publisher; this process's counters never see them) show in the
	// window's REIN_TURNS row and the every-replica activation rate,
	// without a reload.
	readTurnsFlow := func() (msgs string, sparks int) {
		t.Helper()
		var st struct {
			Msgs   string `json:"msgs"`
			Sparks int    `json:"sparks"`
		}
		step("read the traffic table", 30*time.Second, func(ctx context.Context) (err error) {
			st, err = chromedp.Run(ctx, chromedp.Evaluate[struct {
				Msgs   string `json:"msgs"`
				Sparks int    `json:"sparks"`
			}](`(() => ({
  msgs: (document.querySelector('tbody[data-testid="flows"] tr[data-flow="REIN_TURNS"] .messages') || {}).textContent || "",
  sparks: document.querySelectorAll('tbody[data-testid="flows"] svg.spark polyline').length,
}))()`))
			return err
		})
		return st.Msgs, st.Sparks
	}
	readDeploymentRate := func() string {
		t.Helper()
		var rate string
		step("read the every-replica rate", 30*time.Second, func(ctx context.Context) (err error) {
			rate, err = chromedp.Run(ctx, chromedp.Evaluate[string](
				`(document.querySelector('[data-testid="deployment"] .rate') || {}).textContent || ""`))
			return err
		})
		return rate
	}
	before, sparks := readTurnsFlow()
	n0, err := strconv.Atoi(before)
	if err != nil || sparks != len(natsserver.StreamNames) {
		t.Fatalf("traffic table: REIN_TURNS %q, %d sparklines (want one per stream)", before, sparks)
	}
	// The fixture's two stored detections: one clear, one activated.
	if rate := readDeploymentRate(); rate != "50.0%" {
		t.Fatalf("every-replica activation rate %q, want 50.0%%", rate)
	}
	publishTurns(t, f.js, natsserver.IdentityIngress, "elsewhere", 3)
	publishDetections(t, f.js, tenant, "elsewhere", "activated:anaphora", "activated:anaphora")
	testutil.CheckFor(t, 60*time.Second, "the page did not count the other replica's decisions", func() bool {
		return readDeploymentRate() == "75.0%"
	})
	testutil.CheckFor(t, 60*time.Second, "the page did not count the other process's turns", func() bool {
		msgs, sparks := readTurnsFlow()
		return msgs == strconv.Itoa(n0+3) && sparks == len(natsserver.StreamNames) // the script draws them too
	})

	// 5. The alarm banner: a new dead letter and a model whose breaker is
	// open appear on the open page without a reload.
	avail := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: telemetry.MModelAvailable, Help: "m"}, []string{"endpoint"})
	f.reg.MustRegister(avail)
	avail.WithLabelValues("inception").Set(0)
	if err := streams.PublishDeadLetter(context.Background(), f.pub, bus.StageDetector, bus.StreamTurns, 9, 1,
		bus.TurnSubject(tenant, "conv-9", schemas.RoleUser), nil, []byte("{"), "undecodable: not a CloudEvent"); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 60*time.Second, "the alarm banner did not appear", func() bool {
		var alarms []string
		step("read alarms", 30*time.Second, func(ctx context.Context) (err error) {
			alarms, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](
				`[...document.querySelectorAll('[data-testid="alarms"] .alarm[role="alert"]')].map((e) => e.dataset.alarm)`))
			return err
		})
		return slices.Equal(alarms, []string{"dead_letters", "model_unavailable"})
	})

	// 6. Search by conversation id opens its timeline.
	step("search", 60*time.Second, func(ctx context.Context) error {
		_, err := chromedp.Run(ctx, chromedp.WaitEvent(cdppage.LoadEventFired, nil,
			chromedp.SendKeys(chromedp.CSS(`[data-testid="search-input"]`), "conv-1\n")))
		if err != nil {
			return err
		}
		return chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`li.event.planted-thought`)))
	})
	var path string
	step("read the searched page", 30*time.Second, func(ctx context.Context) (err error) {
		path, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname`))
		return err
	})
	if path != "/conversations/acme/conv-1" {
		t.Errorf("search for conv-1 opened %q", path)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Errorf("the browser reported problems:\n%s", strings.Join(problems, "\n"))
	}
}

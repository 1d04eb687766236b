package dashboard

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/streams/natsserver"
)

// Overview is what the overview page shows and /api/overview returns.
// Every number comes with the text the page displays, formatted once here,
// so the server-rendered page and the script's updates agree.
//
// Counts and rates cover Window (and Tenant, when one is chosen). The
// activation rate is activated / judged, where judged decisions are those
// the module answered (activated or clear): a failed decision (the module
// erred or ran out of time, and the turn went on without injection) judged
// nothing, so it is left out of the denominator and shown as the failure
// rate instead.
type Overview struct {
	GeneratedAt time.Time `json:"generated_at"`
	UpdatedText string    `json:"updated_text"`

	Window    Window       `json:"window"`
	Windows   []WindowLink `json:"windows"`
	Tenant    string       `json:"tenant,omitempty"`     // the tenant filter ("" all)
	ErrorType string       `json:"error_type,omitempty"` // the error type filter ("" all)
	AllURL    string       `json:"all_url"`              // this window, every tenant and type
	Coverage  string       `json:"coverage"`             // what span the numbers cover
	Trend     Trend        `json:"trend"`
	Alarms    []Alarm      `json:"alarms"`

	Decisions      Count `json:"decisions"`
	Judged         Count `json:"judged"`
	Activated      Count `json:"activated"`
	Failed         Count `json:"failed"`
	ActivationRate Rate  `json:"activation_rate"` // activated / judged
	// Deployment is the same decisions for every replica, read from
	// REIN_DETECTIONS (the numbers above are this process's counters).
	Deployment  Deployment `json:"deployment"`
	FailureRate Rate       `json:"failure_rate"` // failed / decisions
	Outcomes    []Count    `json:"outcomes"`     // decisions by outcome
	ErrorTypes  []Share    `json:"error_types"`  // activations per error type
	Tenants     []Tenant   `json:"tenants"`

	// Flows is every stream's traffic over Window, read from the streams:
	// the whole deployment, every replica, not this process's counters.
	Flows        []Flow     `json:"flows"`
	FlowCoverage string     `json:"flow_coverage"`
	Consumers    []Consumer `json:"consumers"`
	DeadLetters  Count      `json:"dead_letters"`

	// Latency is p50 and p99 over Window per stage, inception module,
	// model purpose and agent turn, from the histograms /metrics serves
	// (this process's).
	Latency []Latency `json:"latency"`

	// Conversations are the window's newest conversations with their
	// latest decision (every replica's, from REIN_DETECTIONS), clean ones
	// included, narrowed by the filters and Outcome.
	Conversations []ConversationRow `json:"conversations"`
	Outcome       string            `json:"outcome,omitempty"` // the list's outcome filter
	OutcomeLinks  []OutcomeLink     `json:"outcome_links"`

	Recent []Outcome `json:"recent"` // newest first
	// Redacted says the outcomes' text was redacted (see Deps.Reveal).
	Redacted bool `json:"redacted,omitempty"`

	// Problems lists what could not be read (the rest is still shown).
	Problems []string `json:"problems,omitempty"`
}

// Count is one number and its display text.
type Count struct {
	Name  string  `json:"name,omitempty"`
	Value float64 `json:"value"`
	Text  string  `json:"text"`
}

// Rate is a ratio (nil when its denominator is zero) and its display text.
type Rate struct {
	Value *float64 `json:"value"`
	Text  string   `json:"text"`
}

// WindowLink is one choice of the window selector.
type WindowLink struct {
	Name    string `json:"name"`
	Text    string `json:"text"`
	URL     string `json:"url"`
	Current bool   `json:"current"`
}

// Alarm is a banner: something an operator must look at now.
type Alarm struct {
	Kind string `json:"kind"` // dead_letters or model_unavailable
	Text string `json:"text"`
}

// Share is a count with its rate against judged decisions.
type Share struct {
	Name  string `json:"name"`
	Count Count  `json:"count"`
	Rate  Rate   `json:"rate"`
	URL   string `json:"url"` // the overview filtered to this error type
}

// Tenant is one tenant's decisions, activations and activation rate
// (activated / judged).
type Tenant struct {
	Name      string `json:"name"`
	Decisions Count  `json:"decisions"`
	Activated Count  `json:"activated"`
	Rate      Rate   `json:"rate"`
	URL       string `json:"url"` // the overview filtered to this tenant
}

// Consumer is one durable consumer's lag.
type Consumer struct {
	Stream        string `json:"stream"`
	Name          string `json:"name"`
	Pending       Count  `json:"pending"`
	AckPending    Count  `json:"ack_pending"`
	MaxAckPending Count  `json:"max_ack_pending"`
	// OldestPending is how long its oldest unacknowledged message has
	// waited (its lag in time), text "0s" when it has none.
	OldestPending Count `json:"oldest_pending"`
	// Stalled is true when ack-pending sits at its limit.
	Stalled bool `json:"stalled"`
}

// Key is the consumer's data-consumer attribute: <stream>/<name>.
func (c Consumer) Key() string { return c.Stream + "/" + c.Name }

// Outcome is one escalation or report.
type Outcome struct {
	Kind         string    `json:"kind"` // escalation or report
	ID           string    `json:"id"`
	Time         time.Time `json:"time"`
	TimeText     string    `json:"time_text"`
	Tenant       string    `json:"tenant"`
	Conversation string    `json:"conversation"`
	Turn         int       `json:"turn"`
	ErrorType    string    `json:"error_type,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Text         string    `json:"text"`
	URL          string    `json:"url"`
}

// Decision outcomes in display order; others follow alphabetically.
var outcomeOrder = []string{"activated", "clear", "failed"}

func count(name string, v float64) Count {
	return Count{Name: name, Value: v, Text: strconv.FormatFloat(v, 'f', -1, 64)}
}

func rate(num, den float64) Rate {
	if den <= 0 {
		return Rate{Text: "n/a"}
	}
	r := num / den
	return Rate{Value: &r, Text: fmt.Sprintf("%.1f%%", r*100)}
}

func timeText(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// metricsView is what the overview takes from the gatherer.
type metricsView struct {
	decisions   map[[2]string]float64 // tenant, outcome
	activations map[[2]string]float64 // tenant, error_type
	models      map[string]float64    // endpoint → rein_model_available
	latency     map[string]histo      // series (latencyKey) → histogram
}

func newMetricsView() metricsView {
	return metricsView{decisions: map[[2]string]float64{}, activations: map[[2]string]float64{}, models: map[string]float64{}, latency: map[string]histo{}}
}

// Outcomes of rein_detector_decisions_total the rates use.
const (
	outcomeActivated = "activated"
	outcomeFailed    = "failed"
)

// filter narrows the numbers to one tenant and/or one error type ("" all).
type filter struct{ tenant, errorType string }

func (f filter) tenantOK(t string) bool { return f.tenant == "" || f.tenant == t }

// totals sums the decisions of the filter's tenant; activated counts only
// the filter's error type when it has one.
func (v metricsView) totals(f filter) (total, activated, failed float64) {
	for k, n := range v.decisions {
		if !f.tenantOK(k[0]) {
			continue
		}
		total += n
		switch k[1] {
		case outcomeActivated:
			activated += n
		case outcomeFailed:
			failed += n
		}
	}
	if f.errorType != "" {
		activated = 0
		for k, n := range v.activations {
			if f.tenantOK(k[0]) && k[1] == f.errorType {
				activated += n
			}
		}
	}
	return total, activated, failed
}

func labels(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// readMetrics gathers the registry once and keeps the families it shows.
func readMetrics(g prometheus.Gatherer) (metricsView, error) {
	v := newMetricsView()
	mfs, err := g.Gather()
	// Gather returns what it could alongside an error; use both.
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			l, val := labels(m), value(m)
			switch mf.GetName() {
			case telemetry.MDetectorDecisions:
				v.decisions[[2]string{l["tenant"], l["outcome"]}] += val
			case telemetry.MDetectorActivations:
				v.activations[[2]string{l["tenant"], l["error_type"]}] += val
			case telemetry.MModelAvailable:
				v.models[l["endpoint"]] = val
			default:
				if k, ok := latencyKey(mf.GetName(), m); ok && m.GetHistogram() != nil {
					v.latency[k] = v.latency[k].plus(histoOf(m.GetHistogram()))
				}
			}
		}
	}
	if err != nil {
		return v, fmt.Errorf("gather metrics: %w", err)
	}
	return v, nil
}

// fill computes the overview's numbers from the metrics view, narrowed by
// f. Rates are over judged decisions; with an error type, "activated"
// counts that type only (in the headline and the tenant table). The error
// type table lists every type (it is the type filter's menu).
func (v metricsView) fill(o *Overview, f filter) {
	byOutcome := map[string]float64{}
	byTenant := map[string]*Tenant{}
	judgedBy := map[string]float64{}
	tenant := func(name string) *Tenant {
		t := byTenant[name]
		if t == nil {
			t = &Tenant{Name: name}
			byTenant[name] = t
		}
		return t
	}
	for k, n := range v.decisions {
		t := tenant(k[0])
		t.Decisions.Value += n
		if k[1] == outcomeActivated && f.errorType == "" {
			t.Activated.Value += n
		}
		if k[1] != outcomeFailed {
			judgedBy[k[0]] += n
		}
		if f.tenantOK(k[0]) {
			byOutcome[k[1]] += n
		}
	}
	if f.errorType != "" {
		for k, n := range v.activations {
			if k[1] == f.errorType {
				tenant(k[0]).Activated.Value += n
			}
		}
	}
	total, activated, failed := v.totals(f)
	judged := total - failed
	o.Decisions = count("decisions", total)
	o.Judged = count("judged", judged)
	o.Activated = count("activated", activated)
	o.Failed = count("failed", failed)
	o.ActivationRate = rate(activated, judged)
	o.FailureRate = rate(failed, total)

	names := slices.Sorted(func(yield func(string) bool) {
		for k := range byOutcome {
			if !slices.Contains(outcomeOrder, k) && !yield(k) {
				return
			}
		}
	})
	o.Outcomes = nil
	for _, name := range append(slices.Clone(outcomeOrder), names...) {
		o.Outcomes = append(o.Outcomes, count(name, byOutcome[name]))
	}

	byType := map[string]float64{}
	for k, n := range v.activations {
		if f.tenantOK(k[0]) {
			byType[k[1]] += n
		}
	}
	o.ErrorTypes = nil
	for name, n := range byType {
		o.ErrorTypes = append(o.ErrorTypes, Share{Name: name, Count: count(name, n), Rate: rate(n, judged)})
	}
	slices.SortFunc(o.ErrorTypes, func(a, b Share) int {
		return cmp.Or(cmp.Compare(b.Count.Value, a.Count.Value), cmp.Compare(a.Name, b.Name))
	})

	// The tenant table lists every tenant (it is also the filter's menu).
	o.Tenants = nil
	for _, t := range byTenant {
		t.Rate = rate(t.Activated.Value, judgedBy[t.Name])
		t.Decisions = count("", t.Decisions.Value)
		t.Activated = count("", t.Activated.Value)
		o.Tenants = append(o.Tenants, *t)
	}
	slices.SortFunc(o.Tenants, func(a, b Tenant) int {
		return cmp.Or(cmp.Compare(b.Decisions.Value, a.Decisions.Value), cmp.Compare(a.Name, b.Name))
	})
}

// sortConsumers orders consumers by stream (pipeline order) then name, and
// marks stalled ones.
func sortConsumers(cs []Consumer) {
	for i := range cs {
		c := &cs[i]
		c.Stalled = c.MaxAckPending.Value > 0 && c.AckPending.Value >= c.MaxAckPending.Value
	}
	pos := func(s string) int {
		if i := slices.Index(natsserver.StreamNames, s); i >= 0 {
			return i
		}
		return len(natsserver.StreamNames)
	}
	slices.SortFunc(cs, func(a, b Consumer) int {
		return cmp.Or(cmp.Compare(pos(a.Stream), pos(b.Stream)), cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Name, b.Name))
	})
}

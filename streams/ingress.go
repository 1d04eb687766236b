package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
)

// Ingress accepts dialogue turns over HTTP (POST /v1/turns, CloudEvents
// HTTP binding, structured or binary mode) and stores them on
// rein.turns.<tenant>.<conv>.<role>. It answers 202 with the stream
// sequence, 400 with a JSON error naming the bad field, or 413 when the
// body is over the limit. It never publishes what a consumer would reject.
type Ingress struct {
	pub      *Publisher
	maxBytes int
	requests *prometheus.CounterVec

	// tokens are the bearer tokens of the ingress role (SetTokens); nil:
	// no token required. Guarded by limitMu.
	tokens *telemetry.Tokens
	// Per-tenant token buckets (SetTenantRate); nil: no limit.
	limitMu sync.Mutex
	limits  *convcache.Cache[*rate.Limiter]
	perSec  rate.Limit
	burst   int
}

// DefaultTenantRate and DefaultTenantBurst bound each tenant's turns over
// HTTP: 200 turns/s sustained, bursts of 400.
const (
	DefaultTenantRate  = 200
	DefaultTenantBurst = 400
)

// SetTenantRate bounds each tenant's turns per second with a token bucket
// of burst; past it a request is answered 429 with Retry-After. perSecond
// 0 removes the limit. The buckets of the 10,000 most recent tenants are
// kept (a tenant idle for an hour starts afresh).
func (in *Ingress) SetTenantRate(perSecond float64, burst int) {
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if perSecond <= 0 {
		in.limits = nil
		return
	}
	in.perSec, in.burst = rate.Limit(perSecond), max(burst, 1)
	in.limits = convcache.New[*rate.Limiter](10_000, time.Hour)
}

// throttle reports how long tenant must wait before its next turn (0: go).
func (in *Ingress) throttle(tenant string) time.Duration {
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if in.limits == nil {
		return 0
	}
	lim, ok := in.limits.Get(tenant)
	if !ok {
		lim = rate.NewLimiter(in.perSec, in.burst)
		in.limits.Put(tenant, lim)
	}
	r := lim.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return d
	}
	return 0
}

// NewIngress returns the HTTP ingress handler.
func NewIngress(pub *Publisher, maxBytes int, reg prometheus.Registerer) *Ingress {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	in := &Ingress{pub: pub, maxBytes: maxBytes,
		requests: telemetry.NewCounterVec(reg, telemetry.MIngressRequests, "Turns offered to the ingress, by transport and outcome.", "transport", "outcome")}
	in.SetTenantRate(DefaultTenantRate, DefaultTenantBurst)
	return in
}

// IngressError is the JSON body of a refused request.
type IngressError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// IngressAccepted is the JSON body of an accepted turn.
type IngressAccepted struct {
	ID       string `json:"id"`
	Stream   string `json:"stream"`
	Sequence uint64 `json:"seq"`
	Subject  string `json:"subject"`
	// Duplicate: this very turn was stored before (the answer is then
	// 200, and seq is the first copy's); nothing new was stored.
	Duplicate bool `json:"duplicate,omitempty"`
}

func (in *Ingress) refuse(w http.ResponseWriter, code int, field, format string, args ...any) {
	in.requests.WithLabelValues("http", "rejected").Inc()
	telemetry.WriteJSON(w, code, IngressError{Error: fmt.Sprintf(format, args...), Field: field})
}

// ServeHTTP implements http.Handler.
func (in *Ingress) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(in.maxBytes)+4096) // room for structured-mode attributes
	ev, err := cehttp.NewEventFromHTTPRequest(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			in.refuse(w, http.StatusRequestEntityTooLarge, "data", "body exceeds the %d-byte limit", in.maxBytes)
			return
		}
		in.refuse(w, http.StatusBadRequest, "", "not a CloudEvent: %v", err)
		return
	}
	if len(ev.Data()) > in.maxBytes {
		in.refuse(w, http.StatusRequestEntityTooLarge, "data", "data exceeds the %d-byte limit", in.maxBytes)
		return
	}
	subject, field, err := TurnSubjectOf(ev)
	if err != nil {
		in.refuse(w, http.StatusBadRequest, field, "%v", err)
		return
	}
	if tenant, _, ok := SubjectIDs(subject); ok {
		if code, why := in.authorize(r, tenant); code != 0 {
			in.requests.WithLabelValues("http", "unauthorized").Inc()
			if code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="rein"`)
			}
			telemetry.WriteJSON(w, code, IngressError{Error: why})
			return
		}
		if wait := in.throttle(tenant); wait > 0 {
			in.requests.WithLabelValues("http", "throttled").Inc()
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			telemetry.WriteJSON(w, http.StatusTooManyRequests, IngressError{Error: fmt.Sprintf("tenant %s is over its rate of turns; retry in %s", tenant, wait.Round(time.Millisecond))})
			return
		}
	}
	// The turn's span: the child of the platform's trace (the event's
	// traceparent, else the request's), carried on as the turn's traceparent.
	parent, _ := ev.Extensions()[schemas.ExtTraceparent].(string)
	if parent == "" {
		parent = r.Header.Get("traceparent")
	}
	ctx, span := telemetry.Tracer().Start(telemetry.ContextWithTraceparent(r.Context(), parent), "rein.ingress", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	if tp := telemetry.TraceparentOf(ctx); tp != "" {
		ev.SetExtension(schemas.ExtTraceparent, tp)
	}
	msg, err := Encode(subject, ev)
	if err != nil {
		in.refuse(w, http.StatusBadRequest, "", "%v", err)
		return
	}
	// The same check every consumer applies; a turn refused here would
	// only have been dead-lettered later.
	if _, err := Decode(msg.Subject, msg.Header, msg.Data, in.maxBytes); err != nil {
		in.refuse(w, http.StatusBadRequest, fieldOf(err), "%v", err)
		return
	}
	res, err := PublishTurn(ctx, in.pub, msg)
	switch {
	case IsConflict(err):
		in.requests.WithLabelValues("http", "conflict").Inc()
		telemetry.WriteJSON(w, http.StatusConflict, IngressError{Error: err.Error(), Field: "data"})
	case err != nil:
		// The publisher retried for its window (a leader election fits in
		// it); past it, the client may try again: the id deduplicates.
		in.requests.WithLabelValues("http", "error").Inc()
		w.Header().Set("Retry-After", "5")
		telemetry.WriteJSON(w, http.StatusServiceUnavailable, IngressError{Error: err.Error()})
	case res.Duplicate:
		in.requests.WithLabelValues("http", "duplicate").Inc()
		telemetry.WriteJSON(w, http.StatusOK, IngressAccepted{ID: ev.ID(), Stream: StreamTurns, Sequence: res.Sequence, Subject: subject, Duplicate: true})
	default:
		in.requests.WithLabelValues("http", "accepted").Inc()
		telemetry.WriteJSON(w, http.StatusAccepted, IngressAccepted{ID: ev.ID(), Stream: StreamTurns, Sequence: res.Sequence, Subject: subject})
	}
}

// TurnSubjectOf checks that ev is a turn with valid ids, role and payload
// and returns the subject it belongs on; on error, field names the
// offending attribute or data field.
func TurnSubjectOf(ev *event.Event) (subject, field string, err error) {
	if ev.Type() != schemas.TypeTurn {
		return "", "type", fmt.Errorf("type %q: only %s is accepted here", ev.Type(), schemas.TypeTurn)
	}
	meta, err := schemas.MetaOf(ev)
	if err != nil {
		return "", fieldOf(err), err
	}
	if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
		return "", fieldOf(err), err
	}
	var t schemas.Turn
	if err := json.Unmarshal(ev.Data(), &t); err != nil {
		return "", "data", err
	}
	if _, ok := ev.Extensions()[schemas.ExtTurn]; ok && t.Turn != 0 && t.Turn != meta.Turn {
		return "", "turn", fmt.Errorf("turn extension %d disagrees with data.turn %d", meta.Turn, t.Turn)
	}
	if t.Role == schemas.RoleUser && t.Turn == 0 && meta.Turn == 0 {
		return "", "turn", fmt.Errorf("a user turn needs its number (the turn extension or data.turn, from 1): it names the turn's detection, task and reply")
	}
	return TurnSubject(meta.Tenant, meta.Conversation, t.Role), "", nil
}

// fieldOf extracts the field an error is about, for the JSON error body.
func fieldOf(err error) string {
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		return "data" + ve.Field
	}
	switch {
	case errors.Is(err, schemas.ErrBadID), errors.Is(err, schemas.ErrMissingAttr):
		msg := err.Error()
		for _, f := range []string{schemas.ExtTenant, schemas.ExtConversation, schemas.ExtTurn} {
			if strings.Contains(msg, f) {
				return f
			}
		}
	}
	return ""
}

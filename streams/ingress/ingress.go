package ingress

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cloudevents/sdk-go/v2/binding/format"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/reinception/rein/internal/convcache"
	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
)

// Ingress accepts dialogue turns over HTTP (POST /v1/turns, CloudEvents
// HTTP binding, structured or binary mode) and stores them on
// rein.turns.<tenant>.<conv>.<role>. It answers 202 with the stream
// sequence, 400 with a JSON error naming the bad field, or 413 when the
// body is over the limit. It never publishes what a consumer would reject.
type Ingress struct {
	pub      *streams.Publisher
	maxBytes int
	requests *prometheus.CounterVec

	// tokens are the bearer tokens of the ingress role (Config.Tokens);
	// nil: no token required.
	tokens *telemetry.Tokens
	// Per-tenant token buckets (Config.TenantRate); nil: no limit. The
	// cache and inFlight are guarded by limitMu.
	limitMu sync.Mutex
	limits  *convcache.Cache[*rate.Limiter]
	perSec  rate.Limit
	burst   int
	// Requests in flight per tenant, at most inFlightMax each.
	inFlight    map[string]int
	inFlightMax int

	// publish stores a checked turn, decoded, with its payload
	// (streams.PublishTurnDecoded; tests stand in for it).
	publish func(context.Context, *streams.Publisher, *nats.Msg, streams.Decoded, schemas.Turn) (streams.TurnResult, error)
}

// DefaultTenantInFlight bounds each tenant's HTTP requests in flight.
const DefaultTenantInFlight = 64

func (in *Ingress) maxInFlight() int { return in.inFlightMax }

// enter takes one of tenant's in-flight slots; false when none is free.
func (in *Ingress) enter(tenant string) bool {
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if in.inFlight[tenant] >= in.inFlightMax {
		return false
	}
	in.inFlight[tenant]++
	return true
}

// leave gives a slot back; a tenant with none in flight takes no memory.
func (in *Ingress) leave(tenant string) {
	in.limitMu.Lock()
	defer in.limitMu.Unlock()
	if in.inFlight[tenant] <= 1 {
		delete(in.inFlight, tenant)
		return
	}
	in.inFlight[tenant]--
}

// DefaultTenantRate and DefaultTenantBurst bound each tenant's turns over
// HTTP: 200 turns/s sustained, bursts of 400.
const (
	DefaultTenantRate  = 200
	DefaultTenantBurst = 400
)

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

// Config bounds what the ingress accepts and from whom.
type Config struct {
	// MaxBytes is the largest event body (0: streams.DefaultMaxEventBytes).
	MaxBytes int
	// TenantRate bounds each tenant's turns per second with a token bucket
	// of TenantBurst; past it a request is answered 429 with Retry-After.
	// 0: no limit. The buckets of the 10,000 most recent tenants are kept
	// (a tenant idle for an hour starts afresh).
	TenantRate  float64
	TenantBurst int
	// TenantInFlight bounds how many of one tenant's requests may be in
	// flight at once (waiting on JetStream included); past it a request is
	// answered 429 with Retry-After at once (0: DefaultTenantInFlight).
	TenantInFlight int
	// Tokens, when not empty, makes the ingress require a bearer token with
	// the ingress role bound to the event's tenant: no or an unknown token
	// → 401, a token without the role or for other tenants → 403.
	Tokens *telemetry.Tokens
}

// DefaultConfig is the ingress of rein serve's defaults.
func DefaultConfig() Config {
	return Config{TenantRate: DefaultTenantRate, TenantBurst: DefaultTenantBurst}
}

// Validate refuses negative bounds.
func (c Config) Validate() error {
	if c.MaxBytes < 0 || c.TenantRate < 0 || c.TenantBurst < 0 || c.TenantInFlight < 0 {
		return fmt.Errorf("%w: ingress bounds must not be negative", streams.ErrInvalidConfig)
	}
	return nil
}

// Deps are what the ingress stores with and counts into.
type Deps struct {
	Publisher  *streams.Publisher
	Registerer prometheus.Registerer
}

// New returns the HTTP ingress handler.
func New(cfg Config, deps Deps) (*Ingress, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	in := &Ingress{pub: deps.Publisher, maxBytes: cmp.Or(cfg.MaxBytes, streams.DefaultMaxEventBytes),
		publish: streams.PublishTurnDecoded, inFlight: map[string]int{},
		inFlightMax: cmp.Or(cfg.TenantInFlight, DefaultTenantInFlight),
		requests:    telemetry.NewCounterVec(deps.Registerer, telemetry.MIngressRequests, "Turns offered to the ingress, by transport and outcome.", "transport", "outcome")}
	if cfg.TenantRate > 0 {
		in.perSec, in.burst = rate.Limit(cfg.TenantRate), max(cfg.TenantBurst, 1)
		in.limits = convcache.New[*rate.Limiter](10_000, time.Hour)
	}
	if cfg.Tokens.Len() > 0 {
		in.tokens = cfg.Tokens
	}
	return in, nil
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

// kind is what the ingress takes: turns, or feedback (feedback.go).
type kind struct {
	// checkOf checks an offered event and names its subject.
	checkOf func(*event.Event) (c checked, field string, err error)
	stream  string
	// feedback: stored with PublishFeedback, else with Ingress.publish.
	feedback bool
}

var (
	kindTurn     = kind{checkOf: checkTurn, stream: bus.StreamTurns}
	kindFeedback = kind{checkOf: checkFeedback, stream: bus.StreamFeedback, feedback: true}
)

// checked is an offered event as check found it: its subject, and its
// payload when it is a turn, parsed once for the checks and the store.
type checked struct {
	subject string
	turn    schemas.Turn
}

// Feedback is the handler of POST /v1/feedback: a dev.rein.feedback.v1
// event, authenticated, bound to its tenant and answered as turns are.
func (in *Ingress) Feedback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { in.serveHTTP(w, r, kindFeedback) })
}

// ServeHTTP implements http.Handler (POST /v1/turns).
func (in *Ingress) ServeHTTP(w http.ResponseWriter, r *http.Request) { in.serveHTTP(w, r, kindTurn) }

func (in *Ingress) serveHTTP(w http.ResponseWriter, r *http.Request, k kind) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(in.maxBytes)+4096) // room for structured-mode attributes
	ev, err := eventFromHTTP(r)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			in.refuse(w, http.StatusRequestEntityTooLarge, "data", "body exceeds the %d-byte limit", in.maxBytes)
			return
		}
		in.refuse(w, http.StatusBadRequest, "", "not a CloudEvent: %v", err)
		return
	}
	c, o := in.check(ev, k)
	if o.code != 0 {
		in.refuse(w, o.code, o.field, "%s", o.why)
		return
	}
	subject := c.subject
	// Every kind's subject names its tenant; a request without one is
	// refused, never let through unauthenticated.
	tenant, _, ok := streams.SubjectIDs(subject)
	if !ok {
		in.refuse(w, http.StatusInternalServerError, "", "no tenant in subject %s", subject)
		return
	}
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
	// A request waiting on JetStream holds its slot: one tenant's
	// hung requests cannot take every connection of the port.
	if !in.enter(tenant) {
		in.requests.WithLabelValues("http", "busy").Inc()
		w.Header().Set("Retry-After", "1")
		telemetry.WriteJSON(w, http.StatusTooManyRequests, IngressError{Error: fmt.Sprintf("%v: tenant %s has %d requests in flight; retry in a second", ErrTenantBusy, tenant, in.maxInFlight())})
		return
	}
	defer in.leave(tenant)
	// The turn's traceparent: the event's, else the request's.
	tp, _ := schemas.Extension(ev, schemas.ExtTraceparent)
	parent, _ := tp.(string)
	o = in.store(telemetry.ContextWithTraceparent(r.Context(), cmp.Or(parent, r.Header.Get("traceparent"))), ev, c, k)
	in.requests.WithLabelValues("http", o.outcome).Inc()
	if o.code == http.StatusServiceUnavailable {
		// The publisher retried for its window (a leader election fits in
		// it); past it, the client may try again: the id deduplicates.
		w.Header().Set("Retry-After", "5")
	}
	if o.why != "" {
		telemetry.WriteJSON(w, o.code, IngressError{Error: o.why, Field: o.field})
		return
	}
	telemetry.WriteJSON(w, o.code, IngressAccepted{ID: ev.ID(), Stream: k.stream, Sequence: o.res.Sequence, Subject: subject, Duplicate: o.res.Duplicate})
}

// offer is what became of one offered turn, for either transport: an HTTP
// status, the outcome label, and why it was refused (empty when stored).
type offer struct {
	code         int
	outcome      string
	field, why   string
	res          streams.TurnResult
	deadLettered bool   // the refusal's dead letter is written already
	stream       string // where it was stored
}

func refused(code int, field string, err error) offer {
	return offer{code: code, outcome: "rejected", field: field, why: err.Error()}
}

// check is what both transports check of an offered event before anything
// else: its size, and that it is of the kind with valid ids and payload.
// It returns what it found, or the refusal.
func (in *Ingress) check(ev *event.Event, k kind) (checked, offer) {
	if len(ev.Data()) > in.maxBytes {
		return checked{}, refused(http.StatusRequestEntityTooLarge, "data", fmt.Errorf("data exceeds the %d-byte limit", in.maxBytes))
	}
	c, field, err := k.checkOf(ev)
	if err != nil {
		return checked{}, refused(http.StatusBadRequest, field, err)
	}
	return c, offer{}
}

// store stores a checked turn on its subject (PublishTurn: under the id
// rein derives, a conflict dead-lettered), within the turn's span.
func (in *Ingress) store(ctx context.Context, ev *event.Event, c checked, k kind) offer {
	ctx, span := telemetry.Tracer().Start(ctx, "rein.ingress", trace.WithSpanKind(trace.SpanKindProducer))
	defer span.End()
	if tp := telemetry.TraceparentOf(ctx); tp != "" {
		ev.SetExtension(schemas.ExtTraceparent, tp)
	}
	// What every consumer checks of the message as encoded (its data was
	// validated by check, once); a turn refused here would only have been
	// dead-lettered later.
	msg, d, err := streams.EncodeChecked(c.subject, ev, in.maxBytes)
	if err != nil {
		return refused(http.StatusBadRequest, fieldOf(err), err)
	}
	var res streams.TurnResult
	if k.feedback {
		res, err = streams.PublishFeedback(ctx, in.pub, msg, d)
	} else {
		res, err = in.publish(ctx, in.pub, msg, d, c.turn)
	}
	switch {
	case streams.IsConflict(err):
		return offer{code: http.StatusConflict, outcome: "conflict", field: "data", why: err.Error(), res: res, deadLettered: true}
	case err != nil:
		return offer{code: http.StatusServiceUnavailable, outcome: "error", why: err.Error()}
	case res.Duplicate:
		return offer{code: http.StatusOK, outcome: "duplicate", res: res, stream: k.stream}
	}
	return offer{code: http.StatusAccepted, outcome: "accepted", res: res, stream: k.stream}
}

// eventFromHTTP reads the CloudEvent of a request, binary or structured
// mode. A structured body is read by rein's own decoder, so that the turn
// extension may be any integer up to 2^53-1 (sdk-go reads a number there
// as a 32-bit CloudEvents Integer and refuses larger ones).
func eventFromHTTP(r *http.Request) (*event.Event, error) {
	ct := r.Header.Get("Content-Type")
	structured := isStructured(ct)
	// Binary mode 1.0, as sdk-go decides it, is read directly.
	binary := !structured && format.Lookup(ct) == nil && isV1(r.Header["Ce-Specversion"])
	if !structured && !binary {
		return cehttp.NewEventFromHTTPRequest(r)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if structured {
		return structuredEvent(body)
	}
	if ev, ok := binaryHTTPEvent(r.Header, body); ok {
		return ev, nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return cehttp.NewEventFromHTTPRequest(r)
}

func isV1(specversion []string) bool {
	return len(specversion) > 0 && specversion[0] == event.CloudEventsVersionV1
}

// httpToNATS maps the binary-mode HTTP headers rein's platforms send to
// their NATS binding names: each sets the same attribute or extension in
// sdk-go's HTTP reader (which matches canonical keys exactly, and names
// an extension by its key past "Ce-", first letter lower-cased) as its
// NATS name does in its NATS reader.
var httpToNATS = map[string]string{
	"Ce-Id": "ce-id", "Ce-Source": "ce-source", "Ce-Specversion": "ce-specversion", "Ce-Type": "ce-type",
	"Content-Type": "content-type", "Ce-Subject": "ce-subject", "Ce-Time": "ce-time",
	"Ce-Tenant": "ce-tenant", "Ce-Conversation": "ce-conversation", "Ce-Turn": "ce-turn",
	"Ce-Partitionkey": "ce-partitionkey", "Ce-Traceparent": "ce-traceparent",
}

// binaryHTTPEvent reads a binary-mode request as
// cehttp.NewEventFromHTTPRequest does, through streams.ReadBinary, when
// its CloudEvents headers are all of httpToNATS; ok is false for anything
// else (another ce- header, a spec version but 1.0), left to sdk-go.
func binaryHTTPEvent(h http.Header, body []byte) (*event.Event, bool) {
	if !isV1(h["Ce-Specversion"]) {
		return nil, false
	}
	nh := make(nats.Header, len(httpToNATS))
	for k, v := range h {
		nk, ok := httpToNATS[k]
		switch {
		case ok:
			nh[nk] = v
		case strings.HasPrefix(k, "Ce-"):
			return nil, false
		}
	}
	return streams.ReadBinary(nh, body)
}

// TurnSubjectOf checks that ev is a turn with valid ids, role and payload
// and returns the subject it belongs on; on error, field names the
// offending attribute or data field.
func TurnSubjectOf(ev *event.Event) (subject, field string, err error) {
	c, field, err := checkTurn(ev)
	return c.subject, field, err
}

// checkTurn is TurnSubjectOf with the turn's payload.
func checkTurn(ev *event.Event) (c checked, field string, err error) {
	if ev.Type() != schemas.TypeTurn {
		return c, "type", fmt.Errorf("type %q: only %s is accepted here", ev.Type(), schemas.TypeTurn)
	}
	meta, err := schemas.MetaOf(ev)
	if err != nil {
		return c, fieldOf(err), err
	}
	if err := schemas.Validate(ev.Type(), ev.Data()); err != nil {
		return c, fieldOf(err), err
	}
	t := &c.turn
	if err := json.Unmarshal(ev.Data(), t); err != nil {
		return c, "data", err
	}
	if _, ok := schemas.Extension(ev, schemas.ExtTurn); ok && t.Turn != 0 && t.Turn != meta.Turn {
		return c, "turn", fmt.Errorf("turn extension %d disagrees with data.turn %d", meta.Turn, t.Turn)
	}
	if t.Role == schemas.RoleUser && t.Turn == 0 && meta.Turn == 0 {
		return c, "turn", fmt.Errorf("a user turn needs its number (the turn extension or data.turn, from 1): it names the turn's detection, task and reply")
	}
	c.subject = bus.TurnSubject(meta.Tenant, meta.Conversation, t.Role)
	return c, "", nil
}

// fieldOf names the field an error is about, from its type
// (schemas.ValidationError, schemas.AttrError), for the JSON error body.
func fieldOf(err error) string {
	var ve *schemas.ValidationError
	if errors.As(err, &ve) {
		return "data" + ve.Field
	}
	var ae *schemas.AttrError
	if errors.As(err, &ae) {
		return ae.Attr
	}
	return ""
}

// isStructured tells whether a content type is the CloudEvents structured
// JSON mode (one event; a batch is left to sdk-go, which refuses it).
func isStructured(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == event.ApplicationCloudEventsJSON
}

// structuredEvent reads a structured-mode event. A numeric turn extension
// is handed to sdk-go as its decimal string (schemas.MetaOf parses both),
// so that its bound is rein's (2^53-1), not a 32-bit Integer's.
func structuredEvent(body []byte) (*event.Event, error) {
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(body, &attrs); err != nil {
		return nil, err
	}
	if raw := bytes.TrimSpace(attrs[schemas.ExtTurn]); len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		attrs[schemas.ExtTurn], _ = json.Marshal(string(raw))
		b, err := json.Marshal(attrs)
		if err != nil {
			return nil, err
		}
		body = b
	}
	ev := event.New()
	if err := json.Unmarshal(body, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

package streams

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/reinception/rein/internal/telemetry"
	"github.com/reinception/rein/schemas"
)

// Ingress accepts dialogue turns over HTTP (POST /v1/turns, CloudEvents
// HTTP binding, structured or binary mode) and stores them on
// rein.turns.<tenant>.<conv>.<role>. It answers 202 with the stream
// sequence, 400 with a JSON error naming the bad field, or 413 when the
// body is over the limit. It never publishes what a consumer would reject.
// Behind a port with tokens (telemetry.HTTPConfig.Tokens), a caller may
// only post turns of the tenants its token is bound to (403 otherwise);
// per-tenant rate limits answer 429 with Retry-After.
type Ingress struct {
	pub      *Publisher
	maxBytes int
	requests *prometheus.CounterVec
	limits   *telemetry.TenantLimiter
}

// WithLimits sets the per-tenant rate limit: a turn over it is answered 429
// with Retry-After and not stored.
func (in *Ingress) WithLimits(l *telemetry.TenantLimiter) *Ingress {
	in.limits = l
	return in
}

// NewIngress returns the HTTP ingress handler.
func NewIngress(pub *Publisher, maxBytes int, reg prometheus.Registerer) *Ingress {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxEventBytes
	}
	return &Ingress{pub: pub, maxBytes: maxBytes,
		requests: telemetry.NewCounterVec(reg, telemetry.MIngressRequests, "Turns offered to the ingress, by transport and outcome.", "transport", "outcome")}
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
	tenant, _, _ := SubjectIDs(subject)
	if p, authed := telemetry.PrincipalFrom(r.Context()); authed && !p.AllowsTenant(tenant) {
		in.requests.WithLabelValues("http", "forbidden").Inc()
		telemetry.WriteJSON(w, http.StatusForbidden, IngressError{Error: fmt.Sprintf("token %s may not post turns of tenant %s", p.Name, tenant), Field: schemas.ExtTenant})
		return
	}
	if ok, after := in.limits.Allow(tenant); !ok {
		in.requests.WithLabelValues("http", "limited").Inc()
		telemetry.TooManyRequests(w, after, IngressError{Error: fmt.Sprintf("tenant %s is over its rate limit", tenant)})
		return
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
	seq, err := in.pub.PublishMsg(r.Context(), StreamTurns, msg)
	if err != nil {
		in.requests.WithLabelValues("http", "error").Inc()
		telemetry.WriteJSON(w, http.StatusServiceUnavailable, IngressError{Error: err.Error()})
		return
	}
	in.requests.WithLabelValues("http", "accepted").Inc()
	telemetry.WriteJSON(w, http.StatusAccepted, IngressAccepted{ID: ev.ID(), Stream: StreamTurns, Sequence: seq, Subject: subject})
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

package injector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Sidecar answer statuses.
const (
	StatusReady   = "ready"   // the detection activated: the block is in Inception
	StatusNone    = "none"    // the detection said no (or failed): plant nothing
	StatusTimeout = "timeout" // no detection arrived within the budget: plant nothing
	StatusBusy    = "busy"    // too many requests waiting: plant nothing, or ask again
	StatusInvalid = "invalid" // the subject does not name a tenant, conversation and turn
)

// Answer is the JSON reply to a sidecar request on
// rein.inception.get.<tenant>.<conv>.<turn>.
type Answer struct {
	Status      string             `json:"status"`
	Inception   *schemas.Inception `json:"inception"`
	DetectionID string             `json:"detection_id,omitempty"`
	Turn        int                `json:"turn"`
	Error       string             `json:"error,omitempty"`
}

// ParseInceptionSubject splits rein.inception.get.<tenant>.<conv>.<turn>.
func ParseInceptionSubject(subject string) (tenant, conv string, turn int, err error) {
	parts := strings.Split(subject, ".")
	if len(parts) != 6 || bus.InceptionSubject(parts[3], parts[4], parts[5]) != subject {
		return "", "", 0, fmt.Errorf("%w: subject %q is not rein.inception.get.<tenant>.<conversation>.<turn>", ErrBadRequest, subject)
	}
	if err := schemas.CheckIDs(parts[3], parts[4]); err != nil {
		return "", "", 0, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	n, err := schemas.ParseTurn(parts[5])
	if err != nil || n < 1 {
		// User turns are numbered from 1: no detection ever has turn 0.
		return "", "", 0, fmt.Errorf("%w: turn %q is not a turn number (an integer from 1 to %d)", ErrBadRequest, parts[5], schemas.MaxTurn)
	}
	return parts[3], parts[4], n, nil
}

// Sidecar is the responder for platforms that run their own agent: it
// answers rein.inception.get.<tenant>.<conv>.<turn> in a queue group with
// the turn's inception block, read from REIN_DETECTIONS.
type Sidecar struct {
	cfg   SidecarConfig
	deps  streams.StageDeps
	tools map[string]string
}

// NewSidecar checks cfg and prepares the responder; Run starts it. It uses
// the NATS connection of deps.JS.
func NewSidecar(cfg SidecarConfig, deps streams.StageDeps) (*Sidecar, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.JS == nil || deps.JS.Conn() == nil {
		return nil, fmt.Errorf("%w: the sidecar responder needs JetStream on a NATS connection", ErrInvalidConfig)
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	tools, err := RecoveryTools(cfg.RecoveryTools)
	if err != nil {
		return nil, err
	}
	return &Sidecar{cfg: cfg, deps: deps, tools: tools}, nil
}

// Run answers requests until ctx is cancelled, then stops taking them and
// lets the ones in flight finish (each within its budget).
func (s *Sidecar) Run(ctx context.Context) error {
	r, err := s.start(ctx)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return r.stop()
}

// responder is a running Sidecar's subscription and requests in flight.
type responder struct {
	s      *Sidecar
	nc     *nats.Conn
	stream jetstream.Stream
	sub    *nats.Subscription
	sem    chan struct{}
	wg     sync.WaitGroup
}

func (s *Sidecar) start(ctx context.Context) (*responder, error) {
	nc := s.deps.JS.Conn()
	st, err := s.deps.JS.Stream(ctx, bus.StreamDetections)
	if err != nil {
		return nil, fmt.Errorf("injector: stream %s: %w", bus.StreamDetections, err)
	}
	r := &responder{s: s, nc: nc, stream: st, sem: make(chan struct{}, s.cfg.MaxInflight)}
	rctx := context.WithoutCancel(ctx) // in-flight answers finish within their budget
	r.sub, err = nc.QueueSubscribe(bus.InceptionAll, s.cfg.QueueGroup, func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		select {
		case r.sem <- struct{}{}:
		default:
			r.respond(m, Answer{Status: StatusBusy})
			return
		}
		r.wg.Add(1)
		go func() {
			defer func() { <-r.sem; r.wg.Done() }()
			r.respond(m, r.answer(rctx, m.Subject))
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("injector: subscribe %s: %w", bus.InceptionAll, err)
	}
	s.deps.Logger.Info("sidecar responder started", "subject", bus.InceptionAll, "queue", s.cfg.QueueGroup, "wait", s.cfg.Wait)
	return r, nil
}

// stop stops taking requests and waits for the ones in flight.
func (r *responder) stop() error {
	err := r.sub.Unsubscribe()
	r.wg.Wait()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		return fmt.Errorf("injector: unsubscribe: %w", err)
	}
	return nil
}

func (r *responder) respond(m *nats.Msg, a Answer) {
	body, _ := json.Marshal(a)
	if err := m.Respond(body); err != nil {
		r.s.deps.Logger.Debug("sidecar respond", "subject", m.Subject, "err", err)
	}
}

// answer finds the detection of the requested turn, waiting up to the
// budget for one still on its way.
func (r *responder) answer(ctx context.Context, subject string) Answer {
	tenant, conv, turn, err := ParseInceptionSubject(subject)
	if err != nil {
		return Answer{Status: StatusInvalid, Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, r.s.cfg.Wait)
	defer cancel()
	// Watch the conversation's detection subject before looking, so a
	// detection stored between the lookup and the wait is not missed.
	live := make(chan *nats.Msg, 64)
	sub, err := r.nc.ChanSubscribe(bus.DetectionSubject(tenant, conv), live)
	if err != nil {
		return Answer{Status: StatusTimeout, Turn: turn, Error: fmt.Sprintf("watch detections: %v", err)}
	}
	defer func() { _ = sub.Unsubscribe() }()
	if a, ok := r.lookup(ctx, tenant, conv, turn); ok {
		return a
	}
	for {
		select {
		case <-ctx.Done():
			return Answer{Status: StatusTimeout, Turn: turn}
		case m := <-live:
			d, err := streams.Decode(m.Subject, m.Header, m.Data, 0)
			if err != nil {
				continue
			}
			if a, ok := r.s.answerFor(d, turn); ok {
				return a
			}
		}
	}
}

// lookup reads the stored detection of the turn: the conversation's last
// detection by direct get, or, for an earlier turn, a scan of the
// conversation's detections.
func (r *responder) lookup(ctx context.Context, tenant, conv string, turn int) (Answer, bool) {
	subj := streams.StoredSubject(r.stream, bus.DetectionSubject(tenant, conv))
	raw, err := r.stream.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return Answer{}, false
	}
	d, err := streams.Decode(raw.Subject, raw.Header, raw.Data, 0)
	if err != nil {
		return Answer{}, false
	}
	if a, ok := r.s.answerFor(d, turn); ok {
		return a, true
	}
	if detectionTurn(d) < turn {
		return Answer{}, false // not there yet: wait for it
	}
	var found Answer
	var ok bool
	errStop := errors.New("found")
	_ = streams.ReadStream(ctx, r.s.deps.JS, bus.StreamDetections, streams.ReadOptions{Filters: []string{subj}, StopSeq: raw.Sequence},
		func(m streams.Raw) error {
			if m.Decoded == nil {
				return nil
			}
			if found, ok = r.s.answerFor(*m.Decoded, turn); ok {
				return errStop
			}
			return nil
		})
	return found, ok
}

func detectionTurn(d streams.Decoded) int {
	var det schemas.Detection
	if err := json.Unmarshal(d.Event.Data(), &det); err == nil && det.Turn != 0 {
		return det.Turn
	}
	return d.Meta.Turn
}

// answerFor answers from a detection event when it is the requested turn's.
func (s *Sidecar) answerFor(d streams.Decoded, turn int) (Answer, bool) {
	if d.Event.Type() != schemas.TypeDetection {
		return Answer{}, false
	}
	var det schemas.Detection
	if err := json.Unmarshal(d.Event.Data(), &det); err != nil {
		return Answer{}, false
	}
	t := det.Turn
	if t == 0 {
		t = d.Meta.Turn
	}
	if t != turn {
		return Answer{}, false
	}
	a := Answer{Status: StatusNone, DetectionID: d.Event.ID(), Turn: turn, Inception: Inception(det, s.tools)}
	if a.Inception != nil {
		a.Status = StatusReady
	}
	return a, true
}

// Ask is the client side of the sidecar protocol: it requests the inception
// block of one turn and decodes the answer. wait bounds the request and
// should exceed the responder's budget.
func Ask(ctx context.Context, nc *nats.Conn, tenant, conv string, turn int, wait time.Duration) (Answer, error) {
	if err := schemas.CheckIDs(tenant, conv); err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, bus.InceptionSubject(tenant, conv, strconv.Itoa(turn)), nil)
	if err != nil {
		return Answer{}, fmt.Errorf("inception request: %w", err)
	}
	var a Answer
	if err := json.Unmarshal(m.Data, &a); err != nil {
		return Answer{}, fmt.Errorf("inception answer: %w", err)
	}
	return a, nil
}

package labels

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// Request is what a labeller says of one turn.
type Request struct {
	Tenant, Conversation string
	Turn                 int
	Verdict              string
	// ErrorType is the right type (wrong_type, missed_error).
	ErrorType string
	Labeller  string
	Note      string
}

// Detection is a stored detection as the queue and the labels see it.
type Detection struct {
	Tenant, Conversation string
	Turn                 int
	ID                   string
	Rein                 bool
	ErrorType            string
	Module, Model        string
	ModelVersion         string
	UserText             string
	Stored               time.Time
}

// Stratum is the review-queue stratum of the detection.
func (d Detection) Stratum() string {
	if d.Rein {
		return d.ErrorType
	}
	return schemas.StratumClean
}

// Result says what Put did.
type Result struct {
	Label schemas.Label
	// Unchanged: the labeller's last label of the turn says the same, and
	// nothing was stored.
	Unchanged bool
	Sequence  uint64
}

// Put stores a labeller's label of one turn, after checking it against the
// turn's stored detection; when the queue of the detection's day (drawn
// with q) holds the turn, the label records the draw.
func Put(ctx context.Context, js jetstream.JetStream, pub *streams.Publisher, req Request, q QueueConfig, now time.Time) (Result, error) {
	if err := check(req); err != nil {
		return Result{}, err
	}
	det, err := FindDetection(ctx, js, req.Tenant, req.Conversation, req.Turn)
	if err != nil {
		return Result{}, err
	}
	l := schemas.Label{Turn: req.Turn, Verdict: req.Verdict, ErrorType: req.ErrorType, Labeller: req.Labeller, Note: req.Note,
		DetectionID: det.ID, Detected: det.Rein, DetectedType: det.ErrorType, Module: det.Module, Model: det.Model,
		ModelVersion: det.ModelVersion}
	if err := fits(l); err != nil {
		return Result{}, err
	}
	q.Tenant = req.Tenant
	if s, ok, err := SampleOf(ctx, js, q, det, now); err != nil {
		return Result{}, err
	} else if ok {
		l.Sample = &s
	}
	subject := bus.LabelSubject(req.Tenant, req.Conversation, req.Turn, req.Labeller)
	st, err := js.Stream(ctx, bus.StreamLabels)
	if err != nil {
		return Result{}, fmt.Errorf("labels: stream %s: %w", bus.StreamLabels, err)
	}
	if last, found, err := streams.LastEvent(ctx, st, subject); err != nil {
		return Result{}, fmt.Errorf("labels: %w", err)
	} else if found {
		var prev schemas.Label
		if last.Payload(&prev) == nil && prev.Verdict == l.Verdict && prev.ErrorType == l.ErrorType && prev.Note == l.Note {
			return Result{Label: prev, Unchanged: true, Sequence: last.Sequence}, nil
		}
	}
	meta := schemas.Meta{Tenant: req.Tenant, Conversation: req.Conversation, Turn: req.Turn}
	ev, err := schemas.NewEvent(schemas.TypeLabel, schemas.LabelMsgID(req.Tenant, req.Conversation, req.Turn, l), "", meta, l)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBadLabel, err)
	}
	seq, err := pub.Publish(ctx, bus.StreamLabels, subject, &ev)
	if err != nil {
		return Result{}, fmt.Errorf("labels: store: %w", err)
	}
	return Result{Label: l, Sequence: seq}, nil
}

// verdicts lists the verdicts a label may give.
var verdicts = []string{schemas.VerdictCorrect, schemas.VerdictFalseActivation, schemas.VerdictWrongType, schemas.VerdictMissedError}

func check(req Request) error {
	if err := schemas.CheckIDs(req.Tenant, req.Conversation); err != nil {
		return fmt.Errorf("%w: %w", ErrBadLabel, err)
	}
	if req.Turn < 1 || schemas.CheckTurn(req.Turn) != nil {
		return fmt.Errorf("%w: turn %d (user turns count from 1)", ErrBadLabel, req.Turn)
	}
	if !schemas.ValidID(req.Labeller) {
		return fmt.Errorf("%w: labeller %q must match [A-Za-z0-9_-]{1,128}", ErrBadLabel, req.Labeller)
	}
	if !slices.Contains(verdicts, req.Verdict) {
		return fmt.Errorf("%w: verdict %q: want one of %s", ErrBadLabel, req.Verdict, strings.Join(verdicts, ", "))
	}
	return nil
}

// fits checks the verdict against what the detection decided.
func fits(l schemas.Label) error {
	needsType := l.Verdict == schemas.VerdictWrongType || l.Verdict == schemas.VerdictMissedError
	switch {
	case needsType && l.ErrorType == "":
		return fmt.Errorf("%w: %s needs the right error type (--type)", ErrBadLabel, l.Verdict)
	case !needsType && l.ErrorType != "":
		return fmt.Errorf("%w: %s takes no error type", ErrBadLabel, l.Verdict)
	case l.Verdict == schemas.VerdictMissedError && l.Detected:
		return fmt.Errorf("%w: rein activated on this turn (%s): say false_activation, wrong_type or correct", ErrBadLabel, l.DetectedType)
	case (l.Verdict == schemas.VerdictFalseActivation || l.Verdict == schemas.VerdictWrongType) && !l.Detected:
		return fmt.Errorf("%w: rein did not activate on this turn: say correct or missed_error", ErrBadLabel)
	case l.Verdict == schemas.VerdictWrongType && l.ErrorType == l.DetectedType:
		return fmt.Errorf("%w: %s is the type rein detected: say correct", ErrBadLabel, l.ErrorType)
	}
	return nil
}

// FindDetection reads the last stored detection of one turn.
func FindDetection(ctx context.Context, js jetstream.JetStream, tenant, conv string, turn int) (Detection, error) {
	var found *Detection
	err := readDetections(ctx, js, streams.ReadOptions{Filters: bus.SubjectsFor(bus.StreamDetections, tenant, conv)}, func(d Detection) {
		if d.Tenant == tenant && d.Conversation == conv && d.Turn == turn {
			found = &d
		}
	})
	if err != nil {
		return Detection{}, err
	}
	if found == nil {
		return Detection{}, fmt.Errorf("%w: %s/%s turn %d", ErrNoDetection, tenant, conv, turn)
	}
	return *found, nil
}

// readDetections calls fn for each decodable detection in the range, in
// stream order.
func readDetections(ctx context.Context, js jetstream.JetStream, o streams.ReadOptions, fn func(Detection)) error {
	err := streams.ReadStream(ctx, js, bus.StreamDetections, o, func(r streams.Raw) error {
		if r.Decoded == nil || r.Decoded.Event.Type() != schemas.TypeDetection {
			return nil
		}
		var p schemas.Detection
		if r.Decoded.Payload(&p) != nil {
			return nil
		}
		m := r.Decoded.Meta
		fn(Detection{Tenant: m.Tenant, Conversation: m.Conversation, Turn: p.Turn, ID: r.Decoded.Event.ID(), Rein: p.Rein && !p.Failed,
			ErrorType: p.ErrorType, Module: p.Module, Model: p.Model, ModelVersion: p.ModelVersion, UserText: p.UserText, Stored: r.Time})
		return nil
	})
	if err != nil {
		return fmt.Errorf("labels: read %s: %w", bus.StreamDetections, err)
	}
	return nil
}

// Stored is a label as read back.
type Stored struct {
	Tenant, Conversation string
	Label                schemas.Label
	Time                 time.Time
	Sequence             uint64
}

// When is the time of the traffic a label judges: its queue day when it
// came from the queue, else when it was given.
func (s Stored) When() time.Time {
	if s.Label.Sample != nil {
		if d, err := time.Parse(time.DateOnly, s.Label.Sample.Day); err == nil {
			return d
		}
	}
	return s.Time
}

// Filter selects labels: one tenant (empty: every tenant), optionally one
// conversation, judging traffic at or after Since (When).
type Filter struct {
	Tenant, Conversation string
	Since                time.Time
}

// Read returns the labels that count: each labeller's last label of each
// turn, in stream order. A label whose event names another tenant or
// conversation than its subject is skipped: only rein's subjects bind a
// label to its tenant.
func Read(ctx context.Context, js jetstream.JetStream, f Filter) ([]Stored, error) {
	if f.Tenant != "" || f.Conversation != "" {
		t, c := f.Tenant, f.Conversation
		if c == "" {
			c = "x"
		}
		if err := schemas.CheckIDs(t, c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadLabel, err)
		}
	}
	last := map[string]int{}
	var out []Stored
	err := streams.ReadStream(ctx, js, bus.StreamLabels, streams.ReadOptions{Filters: bus.SubjectsFor(bus.StreamLabels, f.Tenant, f.Conversation)},
		func(r streams.Raw) error {
			if r.Decoded == nil || r.Decoded.Event.Type() != schemas.TypeLabel {
				return nil
			}
			var l schemas.Label
			if r.Decoded.Payload(&l) != nil {
				return nil
			}
			m := r.Decoded.Meta
			if r.Subject != bus.LabelSubject(m.Tenant, m.Conversation, l.Turn, l.Labeller) {
				return nil
			}
			s := Stored{Tenant: m.Tenant, Conversation: m.Conversation, Label: l, Time: r.Time, Sequence: r.Sequence}
			if i, ok := last[r.Subject]; ok {
				out[i] = s
				return nil
			}
			last[r.Subject] = len(out)
			out = append(out, s)
			return nil
		})
	if err != nil && !streams.IsNotFound(err) {
		return nil, fmt.Errorf("labels: read %s: %w", bus.StreamLabels, err)
	}
	if !f.Since.IsZero() {
		out = slices.DeleteFunc(out, func(s Stored) bool { return s.When().Before(f.Since) })
	}
	return out, nil
}

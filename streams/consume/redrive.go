package consume

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams"
	"github.com/reinception/rein/streams/bus"
)

// DeadLetterEntry is one dead letter as stored in REIN_DLQ.
type DeadLetterEntry struct {
	Sequence uint64             `json:"dlq_sequence"` // in REIN_DLQ
	Stored   time.Time          `json:"stored"`
	Tenant   string             `json:"tenant,omitempty"`
	Conv     string             `json:"conversation,omitempty"`
	Letter   schemas.DeadLetter `json:"dead_letter"`
	// Redriven is the REIN_DLQ sequence of the record saying this dead
	// letter was put back (0: not redriven).
	Redriven uint64 `json:"redriven_by,omitempty"`
}

// DeadLetterFilter selects dead letters; zero fields select all.
type DeadLetterFilter struct {
	Stage, Tenant, Conversation string
	Reason                      string // a substring of the reason
	Since, Until                time.Time
	FromSeq, ToSeq              uint64 // REIN_DLQ sequences, inclusive
}

func (f DeadLetterFilter) match(e DeadLetterEntry) bool {
	switch {
	case f.Stage != "" && e.Letter.Stage != f.Stage,
		f.Tenant != "" && e.Tenant != f.Tenant,
		f.Conversation != "" && e.Conv != f.Conversation,
		f.Reason != "" && !strings.Contains(e.Letter.Reason, f.Reason),
		!f.Since.IsZero() && e.Stored.Before(f.Since),
		f.ToSeq > 0 && e.Sequence > f.ToSeq:
		return false
	}
	return true
}

// ListDeadLetters reads REIN_DLQ: the dead letters f selects, oldest
// first, each with whether (and by which record) it was redriven.
func ListDeadLetters(ctx context.Context, js jetstream.JetStream, f DeadLetterFilter) ([]DeadLetterEntry, error) {
	var out []DeadLetterEntry
	redriven := map[uint64]uint64{}
	// A dead letter of a full-size event is larger than any event: read up
	// to the stream's own limit.
	err := streams.ReadStream(ctx, js, bus.StreamDLQ, streams.ReadOptions{StartSeq: f.FromSeq, Until: f.Until, MaxBytes: streams.MaxMessageBytes}, func(r streams.Raw) error {
		if r.Decoded == nil {
			return nil
		}
		switch r.Decoded.Event.Type() {
		case schemas.TypeRedrive:
			var rd schemas.Redrive
			if r.Decoded.Payload(&rd) == nil {
				redriven[rd.DLQSequence] = r.Sequence
			}
		case schemas.TypeDeadLetter:
			e := DeadLetterEntry{Sequence: r.Sequence, Stored: r.Time}
			if r.Decoded.Payload(&e.Letter) != nil {
				return nil
			}
			e.Tenant, e.Conv, _ = streams.SubjectIDs(e.Letter.Subject)
			if f.match(e) {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Redriven = redriven[out[i].Sequence]
	}
	return out, nil
}

// RedriveResult is what one redrive did (or, in a dry run, would do).
type RedriveResult struct {
	Redriven []RedrivenLetter `json:"redriven"`
	Skipped  []SkippedLetter  `json:"skipped,omitempty"`
}

// RedrivenLetter is a dead letter put back on its subject.
type RedrivenLetter struct {
	DLQSequence uint64 `json:"dlq_sequence"`
	Subject     string `json:"subject"`
	Stream      string `json:"stream"`
	NewSequence uint64 `json:"new_sequence,omitempty"` // 0 in a dry run
}

// SkippedLetter is a selected dead letter not put back, and why.
type SkippedLetter struct {
	DLQSequence uint64 `json:"dlq_sequence"`
	Why         string `json:"why"`
}

// Redrive puts dead letters back on their original subject, each exactly
// once: a dead letter already redriven (a dev.rein.redrive.v1 record names
// it) is skipped, the message goes out under Nats-Msg-Id
// redrive.<dlq sequence> (so a rerun within the duplicate window stores
// nothing twice), and the record is written once it is stored. A stage
// given the message again handles it as any delivery: a turn whose outcome
// is stored publishes nothing new. Dead letters that cannot succeed again
// are skipped with the reason: undecodable input, conflicting duplicates
// and truncated dead letters (an oversize original of which only a prefix
// is kept). With dryRun nothing is published.
func Redrive(ctx context.Context, pub *streams.Publisher, entries []DeadLetterEntry, dryRun bool) (RedriveResult, error) {
	var res RedriveResult
	for _, e := range entries {
		dl := e.Letter
		skip := func(why string) { res.Skipped = append(res.Skipped, SkippedLetter{e.Sequence, why}) }
		switch {
		case e.Redriven != 0:
			skip(fmt.Sprintf("already redriven (REIN_DLQ #%d)", e.Redriven))
			continue
		case strings.HasPrefix(dl.Reason, streams.ReasonConflictingDuplicate):
			skip("a conflicting duplicate: the turn stored first stands; publish a new turn instead")
			continue
		case strings.HasPrefix(dl.Reason, schemas.ReasonUnverifiedTask):
			skip("an unverified task: not signed by this rein's injector, it would be refused again")
			continue
		case dl.Truncated:
			skip(fmt.Sprintf("truncated: the original body was %d bytes (over the %d-byte event limit) and only its first %d are kept; it cannot be put back", dl.Size, streams.DefaultMaxEventBytes, len(dl.Data)))
			continue
		case dl.Stream == "" || dl.Subject == "":
			skip("the dead letter does not name its stream and subject")
			continue
		}
		msg := &nats.Msg{Subject: dl.Subject, Header: nats.Header(dl.Headers), Data: dl.Data}
		if msg.Header == nil {
			msg.Header = nats.Header{}
		}
		if _, err := streams.Decode(msg.Subject, msg.Header, msg.Data, 0); err != nil {
			skip("undecodable: " + err.Error())
			continue
		}
		msg.Header.Set(bus.HeaderMsgID, "redrive."+strconv.FormatUint(e.Sequence, 10))
		r := RedrivenLetter{DLQSequence: e.Sequence, Subject: dl.Subject, Stream: dl.Stream}
		if !dryRun {
			seq, err := pub.PublishMsg(ctx, dl.Stream, msg)
			if err != nil {
				return res, fmt.Errorf("redrive REIN_DLQ #%d to %s: %w", e.Sequence, dl.Subject, err)
			}
			r.NewSequence = seq
			if err := recordRedrive(ctx, pub, e, seq); err != nil {
				return res, err
			}
		}
		res.Redriven = append(res.Redriven, r)
	}
	return res, nil
}

// recordRedrive stores the dev.rein.redrive.v1 record of a redrive on
// rein.dlq.redriven.
func recordRedrive(ctx context.Context, pub *streams.Publisher, e DeadLetterEntry, newSeq uint64) error {
	ev := event.New()
	ev.SetID("redriven." + strconv.FormatUint(e.Sequence, 10))
	ev.SetType(schemas.TypeRedrive)
	ev.SetSource(schemas.Source)
	ev.SetTime(time.Now().UTC())
	if e.Tenant != "" && schemas.CheckIDs(e.Tenant, e.Conv) == nil {
		ev.SetSubject(e.Conv)
		ev.SetExtension(schemas.ExtTenant, e.Tenant)
		ev.SetExtension(schemas.ExtConversation, e.Conv)
	}
	if err := ev.SetData(schemas.DataContentType, schemas.Redrive{DLQSequence: e.Sequence, Subject: e.Letter.Subject,
		Stream: e.Letter.Stream, NewSequence: newSeq}); err != nil {
		return fmt.Errorf("redrive record: %w", err)
	}
	if _, err := pub.Publish(ctx, bus.StreamDLQ, bus.DLQSubject(redrivenToken), &ev); err != nil {
		return fmt.Errorf("redrive record of REIN_DLQ #%d: %w", e.Sequence, err)
	}
	return nil
}

// redrivenToken is the DLQ subject token of redrive records
// (rein.dlq.redriven).
const redrivenToken = "redriven"

package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// LastTurn reads the last event stored on subject (one direct get where the
// stream allows it) and returns its turn (the rein extension). found is
// false when the subject holds nothing, or when its last message is not a
// decodable rein event, which says nothing of any turn. Stages use it to
// tell whether a turn's output is already stored: a conversation's outputs
// on a subject are stored in turn order.
func LastTurn(ctx context.Context, s jetstream.Stream, subject string) (turn int, found bool, err error) {
	d, found, err := LastEvent(ctx, s, subject)
	return d.Meta.Turn, found, err
}

// LastEvent reads the last event stored on subject, as LastTurn does, and
// returns it decoded.
func LastEvent(ctx context.Context, s jetstream.Stream, subject string) (d Decoded, found bool, err error) {
	raw, err := s.GetLastMsgForSubject(ctx, StoredSubject(s, subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Decoded{}, false, nil
	}
	if err != nil {
		return Decoded{}, false, fmt.Errorf("streams: last message on %s: %w", subject, err)
	}
	d, err = Decode(raw.Subject, raw.Header, raw.Data, 0)
	if err != nil {
		return Decoded{}, false, nil
	}
	d.Sequence = raw.Sequence
	return d, true, nil
}

// TurnStored tells whether subject holds an event of turn, and returns it
// when one was read. A conversation's outputs on a subject are stored in
// turn order while its inputs are handled in order, so the subject's last
// event answers with one direct get: of this turn, stored; of an earlier
// turn, or none, not stored. A later turn's proves nothing: that turn ran
// first when the order gate stopped waiting for this one (MaxHold), and
// this one's output may never have been stored. The subject is then read
// for this turn's event. When it holds none, the turn counts as not stored
// only if the stream still holds everything stored since since (when the
// turn's input was stored; its output, if any, came later): nothing
// removed from the stream's head after it, no per-subject limit. Otherwise
// the event may have aged out, and the turn counts as stored, as the later
// turn's suggests (handling it again would store a second output); the
// Decoded returned is then zero.
func TurnStored(ctx context.Context, js jetstream.JetStream, s jetstream.Stream, subject string, turn int, since time.Time) (Decoded, bool, error) {
	last, found, err := LastEvent(ctx, s, subject)
	if err != nil || !found || last.Meta.Turn < turn {
		return Decoded{}, false, err
	}
	if last.Meta.Turn == turn {
		return last, true, nil
	}
	name := s.CachedInfo().Config.Name
	own, found, err := findOnSubject(ctx, js, name, StoredSubject(s, subject), last.Sequence, func(d Decoded) bool { return d.Meta.Turn == turn })
	switch {
	case found:
		return *own.Decoded, true, nil
	case err != nil:
		return Decoded{}, false, fmt.Errorf("streams: turn %d on %s: %w", turn, subject, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return Decoded{}, false, fmt.Errorf("streams: %s: %w", name, err)
	}
	return Decoded{}, !holdsSince(info, since), nil
}

// errTurnFound stops findOnSubject's read at the event it looks for.
var errTurnFound = errors.New("turn found")

// findOnSubject reads filter in stream up to before stop for the first
// event that match accepts.
func findOnSubject(ctx context.Context, js jetstream.JetStream, stream, filter string, stop uint64, match func(Decoded) bool) (Raw, bool, error) {
	var own Raw
	err := ReadSubject(ctx, js, stream, filter, 0, stop, func(r Raw) error {
		if r.Decoded != nil && match(*r.Decoded) {
			own = r
			return errTurnFound
		}
		return nil
	})
	if errors.Is(err, errTurnFound) {
		return own, true, nil
	}
	return Raw{}, false, err
}

// holdsSince tells whether a stream still holds every message stored since
// t: limits remove messages from the head only, so its first message being
// its first ever, or no younger than t, says so — unless a per-subject
// limit removes them from within, or acks do (a work-queue or interest
// stream).
func holdsSince(info *jetstream.StreamInfo, t time.Time) bool {
	if info.Config.MaxMsgsPerSubject > 0 || info.Config.Retention != jetstream.LimitsPolicy {
		return false
	}
	return info.State.FirstSeq <= 1 || (!t.IsZero() && !info.State.FirstTime.After(t))
}

package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// Feedback from a platform (dev.rein.feedback.v1, POST /v1/feedback or
// rein.ingest.<tenant>.<conv>.feedback) is stored on
// rein.feedback.<tenant>.<conv>.<key> in REIN_FEEDBACK, one event per
// conversation and key (its kind, or label-<label>), under the id rein
// derives, feedback.<tenant>.<conv>.<key>. The same event offered again is
// a duplicate; another one for the same key is a conflict, dead-lettered.

// FeedbackID is the id, and Nats-Msg-Id, of a conversation's feedback of
// one key.
func FeedbackID(tenant, conv, key string) string {
	return "feedback." + tenant + "." + conv + "." + key
}

// PublishFeedback stores one checked feedback event (msg as Encode made
// it, on its FeedbackSubject; d, its decoding) under FeedbackID: the
// subject's stored event, if any, decides duplicate or conflict, past the
// duplicate window too.
func PublishFeedback(ctx context.Context, pub *Publisher, msg *nats.Msg, d Decoded) (TurnResult, error) {
	var f schemas.Feedback
	if err := d.Payload(&f); err != nil {
		return TurnResult{}, err
	}
	key := f.Key()
	if want := bus.FeedbackSubject(d.Meta.Tenant, d.Meta.Conversation, key); msg.Subject != want {
		return TurnResult{}, fmt.Errorf("%w: this feedback belongs on %s, not %s", ErrUndecodable, want, msg.Subject)
	}
	msg.Header.Set(bus.HeaderMsgID, FeedbackID(d.Meta.Tenant, d.Meta.Conversation, key))
	conflict := func(seq uint64) (TurnResult, error) {
		cerr := fmt.Errorf("%w: %s feedback of %s/%s is already stored (seq %d) with different content",
			ErrConflictingDuplicate, key, d.Meta.Tenant, d.Meta.Conversation, seq)
		if err := PublishDeadLetter(ctx, pub, bus.StageIngress, bus.StreamFeedback, 0, 0, msg.Subject, msg.Header, msg.Data, ReasonConflictingDuplicate+": "+cerr.Error()); err != nil {
			return TurnResult{}, fmt.Errorf("%w (and its dead letter failed: %v)", cerr, err)
		}
		return TurnResult{Sequence: seq}, cerr
	}
	s, err := pub.js.Stream(ctx, bus.StreamFeedback)
	if err != nil {
		return TurnResult{}, fmt.Errorf("feedback: %w", err)
	}
	check := func() (TurnResult, bool, error) {
		last, found, err := LastEvent(ctx, s, msg.Subject)
		if err != nil || !found {
			return TurnResult{}, false, err
		}
		if sameTurn(last.Subject, last.Event.Data(), msg) {
			return TurnResult{Sequence: last.Sequence, Duplicate: true}, true, nil
		}
		r, err := conflict(last.Sequence)
		return r, true, err
	}
	if r, found, err := check(); err != nil || found {
		return r, err
	}
	seq, dup, err := pub.publishOne(ctx, bus.StreamFeedback, msg)
	if errors.Is(err, ErrIDHijack) || (err == nil && dup) {
		// Another copy was stored meanwhile: it decides.
		if r, found, err := check(); err != nil || found {
			return r, err
		}
		return TurnResult{Sequence: seq, Duplicate: true}, nil
	}
	return TurnResult{Sequence: seq}, err
}

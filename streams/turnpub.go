package streams

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// TurnResult is what storing a turn from outside rein came to.
type TurnResult struct {
	Sequence uint64 // the stream sequence of the stored turn (the first copy for a duplicate)
	// Duplicate: this very turn (same tenant, conversation, number, role
	// and content) was stored before; nothing new was stored.
	Duplicate bool
}

// ConflictError says that another event is stored under the turn's
// derived id: same tenant, conversation, number and role, other content.
// The offered turn is not stored; it is dead-lettered with reason
// conflicting_duplicate.
type ConflictError struct {
	Tenant, Conversation, Role string
	Turn                       int
	StoredSeq                  uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: turn %d (%s) of %s/%s is already stored (seq %d) with different content",
		ReasonConflictingDuplicate, e.Turn, e.Role, e.Tenant, e.Conversation, e.StoredSeq)
}

func (e *ConflictError) Unwrap() error { return ErrConflictingDuplicate }

// ReasonConflictingDuplicate is the dead-letter reason of a turn offered
// again with different content.
const ReasonConflictingDuplicate = "conflicting_duplicate"

// PublishTurn stores one turn offered from outside rein (the HTTP ingress,
// rein publish) — msg as Encode made it, on its turn subject. The
// Nats-Msg-Id the stream deduplicates on is derived from the turn's
// tenant, conversation, number and role (schemas.TurnMsgID), never the
// caller's event id, which stays in the event for correlation. When the
// stream reports a duplicate, the stored copy is read back: the same turn
// → Duplicate; different content → the offered turn is dead-lettered
// (stage "ingress", reason conflicting_duplicate) and a *ConflictError
// returned. An agent turn without a number keeps its event id: it names
// no turn to derive from.
func PublishTurn(ctx context.Context, pub *Publisher, msg *nats.Msg) (TurnResult, error) {
	d, err := Decode(msg.Subject, msg.Header, msg.Data, 0)
	if err != nil {
		return TurnResult{}, err
	}
	var t schemas.Turn
	if err := d.Payload(&t); err != nil {
		return TurnResult{}, err
	}
	return PublishTurnDecoded(ctx, pub, msg, d, t)
}

// PublishTurnDecoded is PublishTurn of a message already decoded (d, with
// t its payload) and checked: the ingress decodes and checks once before
// it stores.
func PublishTurnDecoded(ctx context.Context, pub *Publisher, msg *nats.Msg, d Decoded, t schemas.Turn) (TurnResult, error) {
	if want := bus.TurnSubject(d.Meta.Tenant, d.Meta.Conversation, t.Role); msg.Subject != want {
		return TurnResult{}, fmt.Errorf("%w: a %s turn belongs on %s, not %s", ErrUndecodable, t.Role, want, msg.Subject)
	}
	turn := d.Meta.Turn
	if turn == 0 {
		turn = t.Turn
	}
	conflict := func(seq uint64) (TurnResult, error) {
		cerr := &ConflictError{Tenant: d.Meta.Tenant, Conversation: d.Meta.Conversation, Role: t.Role, Turn: turn, StoredSeq: seq}
		if err := PublishDeadLetter(ctx, pub, bus.StageIngress, bus.StreamTurns, 0, 0, msg.Subject, msg.Header, msg.Data, cerr.Error()); err != nil {
			return TurnResult{}, fmt.Errorf("%w (and its dead letter failed: %v)", cerr, err)
		}
		return TurnResult{Sequence: seq}, cerr
	}
	if turn > 0 {
		msg.Header.Set(bus.HeaderMsgID, schemas.TurnMsgID(d.Meta.Tenant, d.Meta.Conversation, turn, t.Role))
		// Past the duplicate window the stream no longer knows the id:
		// the conversation's stored turns tell whether this number is used.
		stored, found, err := storedTurn(ctx, pub.js, msg.Subject, turn)
		if err != nil {
			return TurnResult{}, fmt.Errorf("ingress: duplicate check: %w", err)
		}
		if found {
			if sameTurn(stored.Subject, stored.Data, msg) {
				return TurnResult{Sequence: stored.Sequence, Duplicate: true}, nil
			}
			return conflict(stored.Sequence)
		}
	}
	seq, dup, err := pub.publishOne(ctx, bus.StreamTurns, msg)
	if errors.Is(err, ErrIDHijack) {
		// Another message holds the derived id (only rein's identities
		// publish turns, so this is a fault, never a tenant's doing).
		return conflict(seq)
	}
	if err != nil || !dup {
		return TurnResult{Sequence: seq}, err
	}
	stream, err := pub.js.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return TurnResult{}, fmt.Errorf("ingress: duplicate check: %w", err)
	}
	stored, err := stream.GetMsg(ctx, seq)
	if err != nil {
		return TurnResult{}, fmt.Errorf("ingress: duplicate check: read seq %d: %w", seq, err)
	}
	if sameTurn(stored.Subject, stored.Data, msg) {
		return TurnResult{Sequence: seq, Duplicate: true}, nil
	}
	return conflict(seq)
}

// storedTurn finds turn number n stored on subject (a conversation's user
// or agent turns): one direct get of the subject's last turn, which says
// whether n can be stored at all (turns are numbered upwards), and only
// then a read of the subject for it.
func storedTurn(ctx context.Context, js jetstream.JetStream, subject string, n int) (Raw, bool, error) {
	s, err := js.Stream(ctx, bus.StreamTurns)
	if err != nil {
		return Raw{}, false, err
	}
	last, found, err := LastEvent(ctx, s, subject)
	if err != nil || !found || turnNumber(last) < n {
		return Raw{}, false, err
	}
	own, found, err := findOnSubject(ctx, js, bus.StreamTurns, StoredSubject(s, subject), last.Sequence+1, func(d Decoded) bool { return turnNumber(d) == n })
	if err != nil {
		return Raw{}, false, fmt.Errorf("turn %d on %s: %w", n, subject, err)
	}
	return own, found, nil
}

// turnNumber is a stored turn's number: its turn extension, else
// data.turn (a turn offered with the number in its data only).
func turnNumber(d Decoded) int {
	if d.Meta.Turn != 0 {
		return d.Meta.Turn
	}
	var t schemas.Turn
	if d.Payload(&t) != nil {
		return 0
	}
	return t.Turn
}

// sameTurn tells whether the stored message is the offered turn again: the
// same subject and the same payload (compared as JSON values, so that key
// order and spacing do not count).
func sameTurn(subject string, data []byte, offered *nats.Msg) bool {
	if Unpartitioned(subject) != offered.Subject {
		return false
	}
	if bytes.Equal(data, offered.Data) {
		return true
	}
	var a, b any
	if json.Unmarshal(data, &a) != nil || json.Unmarshal(offered.Data, &b) != nil {
		return false
	}
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return bytes.Equal(ra, rb)
}

// IsConflict reports whether err is a conflicting duplicate.
func IsConflict(err error) bool { return errors.Is(err, ErrConflictingDuplicate) }

package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/reinception/rein/schemas"
	"github.com/reinception/rein/streams/bus"
)

// subjectPage is how many messages one batched direct get returns.
const subjectPage = 256

// SyncQueueLen is the capacity rein gives a connection's synchronous
// subscriptions (nats.SyncQueueLen): room for one batched get's page and
// its end-of-batch marker, with margin, so a page never overflows while
// its reader works. The client's default (65,536) made every
// ReadSubject allocate a 512 KiB channel: at a steady 1,000 turns/s with
// agent-cache misses that was three quarters of the bytes allocated.
const SyncQueueLen = 2 * subjectPage

// ReadSubject reads the messages of one subject filter stored from
// sequence from (0: the first) up to before stop (0: the last), in
// sequence order, with batched direct gets: no
// consumer is created, and a read costs one round trip per page of 256
// messages. It is for the short per-conversation reads of a stage's cache
// miss; long ranges use ReadStream. Messages that are rein events come
// with Decoded set.
func ReadSubject(ctx context.Context, js jetstream.JetStream, stream, filter string, from, stop uint64, fn func(Raw) error) error {
	return ReadSubjectRaw(ctx, js, stream, filter, from, stop, func(r Raw) error {
		if d, err := Decode(r.Subject, r.Header, r.Data, 0); err == nil {
			d.Sequence, d.Stored = r.Sequence, r.Time
			r.Decoded = &d
		}
		return fn(r)
	})
}

// ReadSubjectRaw is ReadSubject without decoding, for messages that are
// not rein events (the records of the conversations bucket).
func ReadSubjectRaw(ctx context.Context, js jetstream.JetStream, stream, filter string, from, stop uint64, fn func(Raw) error) error {
	for seq := max(from, 1); stop == 0 || seq < stop; {
		msgs, err := jetstreamext.GetBatch(ctx, js, stream, subjectPage, jetstreamext.GetBatchSeq(seq), jetstreamext.GetBatchSubject(filter))
		if err != nil {
			return fmt.Errorf("read %s %s: %w", stream, filter, err)
		}
		n := 0
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read %s %s: %w", stream, filter, err)
			}
			if stop > 0 && m.Sequence >= stop {
				return nil
			}
			n++
			seq = m.Sequence + 1
			if err := fn(Raw{Stream: stream, Subject: m.Subject, Sequence: m.Sequence, Time: m.Time, Header: m.Header, Data: m.Data}); err != nil {
				return err
			}
		}
		if n < subjectPage {
			return nil
		}
	}
	return nil
}

// ReadConversationTurns calls fn with the user and agent turns of one
// conversation stored in REIN_TURNS (turns, looked up) before stop (0:
// all), in stored order. It reads each role's literal subject
// (StoredSubject) with ReadSubject and merges the two: a wildcard filter
// over the conversation would make the server scan (see StoredSubject).
func ReadConversationTurns(ctx context.Context, js jetstream.JetStream, turns jetstream.Stream, tenant, conv string, stop uint64, fn func(Raw) error) error {
	var all []Raw
	for _, role := range []string{schemas.RoleUser, schemas.RoleAgent} {
		subject := StoredSubject(turns, bus.TurnSubject(tenant, conv, role))
		if err := ReadSubject(ctx, js, bus.StreamTurns, subject, 0, stop, func(r Raw) error {
			all = append(all, r)
			return nil
		}); err != nil {
			return err
		}
	}
	slices.SortFunc(all, func(a, b Raw) int { return cmp.Compare(a.Sequence, b.Sequence) })
	for _, r := range all {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
